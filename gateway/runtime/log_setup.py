"""Where the log goes and how each line looks: stderr, optionally a rotating file, as text or
JSON lines, one line per event, with the chatty libraries held at WARNING."""

from __future__ import annotations

import json
import logging
import logging.handlers
from datetime import UTC, datetime
from pathlib import Path

from gateway.config.schema import Config, LoggingSettings, hermes_home
from gateway.config.secrets import install_log_sanitizer

QUIET_LIBRARIES = (
    "httpx",
    "httpcore",
    "httpx2",  # the HTTP client of newer anthropic SDKs
    "httpcore2",
    "telegram",
    "discord",
    "aiosqlite",
    "alembic",
    "anthropic",
    "openai",
)
"""Libraries logged at WARNING or above whatever the level: at DEBUG they log request bodies
and SQL parameters, so users' words."""
SDK_ASKS_FOR_DEBUG = ("mcp",)
"""Libraries at WARNING unless ``logging.level`` is DEBUG: the MCP SDK logs tool arguments and
results at DEBUG and session ids at INFO, which only someone debugging a server should see."""
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, and the
    exception's type and traceback when there is one (newlines stay inside the string)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class OneLineFormatter(logging.Formatter):
    """Text lines; a traceback is folded onto its record's line, so one event is one line."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\n", " | ")


def log_file_path(settings: LoggingSettings) -> Path | None:
    """The log file (a relative path is under ``$HERMES_HOME``), or None for stderr only."""
    if settings.file is None:
        return None
    path = Path(settings.file).expanduser()
    return path if path.is_absolute() else hermes_home() / path


def configure_logging(config: Config) -> None:
    """Log to stderr (and ``logging.file`` when set, rotated at ``max_bytes`` keeping
    ``backups`` old files) at the configured level, in ``logging.format``; the
    :data:`QUIET_LIBRARIES` at WARNING at least; secrets masked in every record."""
    settings = config.logging
    formatter: logging.Formatter = (
        JsonLinesFormatter() if settings.format == "json" else OneLineFormatter(TEXT_FORMAT)
    )
    root = logging.getLogger()
    if not root.handlers:  # a host that set up logging itself (tests, an embedding) keeps it
        stream = logging.StreamHandler()
        stream.setFormatter(formatter)
        root.addHandler(stream)
        root.setLevel(getattr(logging, settings.level))
    path = log_file_path(settings)
    if path is not None and not any(
        isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path for h in root.handlers
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        rotating = logging.handlers.RotatingFileHandler(
            path, maxBytes=settings.max_bytes, backupCount=settings.backups, encoding="utf-8"
        )
        rotating.setFormatter(formatter)
        rotating.setLevel(getattr(logging, settings.level))
        root.addHandler(rotating)
    for noisy in QUIET_LIBRARIES:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.root.level))
    sdk_level = logging.DEBUG if settings.level == "DEBUG" else logging.WARNING
    for sdk in SDK_ASKS_FOR_DEBUG:
        logging.getLogger(sdk).setLevel(sdk_level)
    install_log_sanitizer(config)
