"""Keeping secrets and users' words out of the log, at the logging layer itself.

Our own code never logs a token, but third-party libraries do: python-telegram-bot puts the bot
token into its InvalidToken text and the request URL (``/bot<token>/getMe``), and at DEBUG level
it logs every request's parameters and every answer (users' message text included). So one
:class:`LogSanitizer` is installed process-wide (on the root logger, its handlers, and the
record factory, which covers every logger and every handler added later). It

* replaces every secret value it is given (:func:`gateway.config.secrets.install_log_sanitizer`
  gives those the configuration names: its environment variables' values, the database URL's
  password; an adapter adds a generated webhook secret) and any ``bot<id>:<secret>``
  URL part with ``***``, in the message, its arguments and the formatted traceback;
* strips the payload from python-telegram-bot's records that carry request or update data, and
  turns its "invalid JSON" record (the whole body, at ERROR, on every attempt) into a DEBUG line
  without the body: our poll loop logs that failure once, with its cause.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

MASK = "***"
MIN_SECRET_LENGTH = 8
"""Shorter values are not masked: they would blank out ordinary words (real keys are long)."""
BOT_TOKEN_IN_URL = re.compile(r"bot\d+(?::|%3A)[A-Za-z0-9_-]+")
"""A Telegram bot token as it appears in Bot API URLs (``/bot123456:ABC.../getMe``)."""

_SANITIZED = "hermes_sanitized"
"""Set on a record once sanitized, so the handlers' filters skip the work."""
_PTB_LOGGER_PREFIX = "telegram"
_PTB_PAYLOAD_TEMPLATES = {
    "Calling Bot API endpoint `%s` with parameters `%s`": "Calling Bot API endpoint `%s`",
    "Call to Bot API endpoint `%s` finished with return value `%s`": (
        "Call to Bot API endpoint `%s` finished"
    ),
    "Error while parsing updates! Received data was %r": "Error while parsing updates",
}
"""python-telegram-bot's log templates whose last argument is request or update data."""
_PTB_QUIETED_TEMPLATES = {
    'Can not load invalid JSON data: "%s"': "Can not load invalid JSON data (body not logged)",
}
"""PTB records demoted to DEBUG without their arguments (the body of a non-JSON answer)."""


class LogSanitizer(logging.Filter):
    """Masks secret values and Bot API token URLs, and strips PTB's payload records."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] = BOT_TOKEN_IN_URL

    def add_secrets(self, values: Iterable[str]) -> None:
        """Mask these values from now on (too short or empty ones are ignored)."""
        fresh = {v.strip() for v in values if len(v.strip()) >= MIN_SECRET_LENGTH}
        if fresh <= self._secrets:
            return
        self._secrets |= fresh
        # Longest first, so a secret containing another is masked whole.
        alternatives = [re.escape(s) for s in sorted(self._secrets, key=len, reverse=True)]
        self._pattern = re.compile("|".join([BOT_TOKEN_IN_URL.pattern, *alternatives]))

    def redact(self, text: str) -> str:
        """The text with every secret and token URL part masked."""
        return self._pattern.sub(lambda m: "bot" + MASK if m[0].startswith("bot") else MASK, text)

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place (it is always kept)."""
        if getattr(record, _SANITIZED, False):
            return True
        if record.name.startswith(_PTB_LOGGER_PREFIX):
            _strip_payload(record)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the template only
            message = str(record.msg)
        record.msg = self.redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        setattr(record, _SANITIZED, True)
        return True


def _strip_payload(record: logging.LogRecord) -> None:
    template = record.msg if isinstance(record.msg, str) else ""
    quiet = _PTB_QUIETED_TEMPLATES.get(template)
    if quiet is not None:
        # Demoted before any handler looks at the level (when called from the record factory).
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
    short = quiet or _PTB_PAYLOAD_TEMPLATES.get(template)
    if short is None:
        return
    args = record.args if isinstance(record.args, tuple) else ()
    record.msg = short
    record.args = args[: short.count("%")]
    # The traceback of a parse error shows the update's fields.
    record.exc_info = None
    record.exc_text = None


_sanitizer = LogSanitizer()
_installed_factory: list[bool] = []


def log_sanitizer() -> LogSanitizer:
    """The process-wide sanitizer (for tests and for adding secrets known only later)."""
    return _sanitizer


def install_sanitizer(secrets: Iterable[str]) -> LogSanitizer:
    """Mask ``secrets`` (and Bot API token URLs) in every log record from now on; safe to call
    repeatedly (later calls add secrets)."""
    _sanitizer.add_secrets(secrets)
    root = logging.getLogger()
    for target in [root, *root.handlers]:
        if _sanitizer not in target.filters:
            target.addFilter(_sanitizer)
    if not _installed_factory:
        _installed_factory.append(True)
        previous = logging.getLogRecordFactory()

        def sanitized_record(*args: object, **kwargs: object) -> logging.LogRecord:
            record = previous(*args, **kwargs)  # type: ignore[arg-type]
            _sanitizer.filter(record)
            return record

        logging.setLogRecordFactory(sanitized_record)
    return _sanitizer
