"""Secrets never reach the log, whoever logs them; python-telegram-bot's payloads are stripped."""

from __future__ import annotations

import logging

import pytest

from gateway.config.schema import parse_config
from gateway.config.secrets import install_log_sanitizer
from gateway.text.redaction import LogSanitizer

TOKEN = "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
API_KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"


def sanitized(record: logging.LogRecord, *secrets: str) -> logging.LogRecord:
    sanitizer = LogSanitizer()
    sanitizer.add_secrets(secrets)
    assert sanitizer.filter(record)
    return record


def record(
    name: str, msg: str, *args: object, exc: BaseException | None = None
) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, exc_info)


def formatted(rec: logging.LogRecord) -> str:
    return logging.Formatter("%(message)s").format(rec)


def test_a_configured_secret_is_masked_in_the_message_its_arguments_and_the_traceback() -> None:
    try:
        raise ValueError(f"The token `{TOKEN}` was rejected by the server.")
    except ValueError as exc:
        rec = record("some.library", "start failed: %s (key %s)", exc, API_KEY, exc=exc)
    text = formatted(sanitized(rec, TOKEN, API_KEY))
    assert TOKEN not in text and API_KEY not in text
    assert "start failed: The token `***` was rejected" in text
    assert "ValueError" in text  # the traceback stays, masked


def test_the_token_part_of_a_bot_api_url_is_masked_even_when_not_configured() -> None:
    rec = record("httpx", "HTTP Request: POST %s", f"https://api.telegram.org/bot{TOKEN}/getMe")
    assert formatted(sanitized(rec)) == "HTTP Request: POST https://api.telegram.org/bot***/getMe"


def test_short_values_are_not_treated_as_secrets() -> None:
    rec = record("x", "polling started")
    assert formatted(sanitized(rec, "ing", "")) == "polling started"


@pytest.mark.parametrize(
    ("template", "args", "expected"),
    [
        (
            "Calling Bot API endpoint `%s` with parameters `%s`",
            ("sendMessage", {"text": "my diary entry"}),
            "Calling Bot API endpoint `sendMessage`",
        ),
        (
            "Call to Bot API endpoint `%s` finished with return value `%s`",
            ("getUpdates", [{"message": {"text": "my diary entry"}}]),
            "Call to Bot API endpoint `getUpdates` finished",
        ),
        (
            "Error while parsing updates! Received data was %r",
            ([{"message": {"text": "my diary entry"}}],),
            "Error while parsing updates",
        ),
    ],
)
def test_python_telegram_bot_records_lose_their_payload(
    template: str, args: tuple[object, ...], expected: str
) -> None:
    rec = record("telegram.ext.ExtBot", template, *args, exc=KeyError("my diary entry"))
    text = formatted(sanitized(rec))
    assert text == expected


def test_python_telegram_bot_invalid_json_record_is_demoted_without_the_body() -> None:
    rec = record(
        "telegram.BaseRequest", 'Can not load invalid JSON data: "%s"', "<html>secret</html>"
    )
    sanitized(rec)
    assert rec.levelno == logging.DEBUG
    assert "<html>" not in formatted(rec)


def test_installed_sanitizer_masks_records_of_every_logger_and_handler(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("HERMES_UNIT_TOKEN", TOKEN)
    config = parse_config({"platforms": {"telegram": {"token_env": "HERMES_UNIT_TOKEN"}}})
    install_log_sanitizer(config)
    caplog.set_level(logging.INFO)
    logging.getLogger("third.party.deep.logger").warning("token is %s", TOKEN)
    assert TOKEN not in caplog.text
    assert "token is ***" in caplog.text
