"""The Bot API's wire format: reading request parameters and writing result/error envelopes.

Clients send parameters as a query string, form-urlencoded, multipart or JSON. python-telegram-bot
sends forms whose non-string values are JSON-encoded strings (``chat_id="42"``,
``reply_parameters='{"message_id": 3}'``); `decode_params` turns them back into typed values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

Params = dict[str, Any]


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """A file sent in a multipart request (``sendVoice``'s ``voice``)."""

    filename: str
    content_type: str
    data: bytes

    def __str__(self) -> str:
        return f"<file {self.filename}>"


_INTEGER_PARAMS = frozenset(
    {
        "chat_id",
        "message_id",
        "message_thread_id",
        "offset",
        "limit",
        "timeout",
        "user_id",
        "reply_to_message_id",
        "from_chat_id",
        "max_connections",
        "cache_time",
        "draft_id",
        "duration",
    }
)
_BOOLEAN_PARAMS = frozenset(
    {
        "disable_notification",
        "protect_content",
        "drop_pending_updates",
        "allow_sending_without_reply",
        "disable_web_page_preview",
        "show_alert",
        "allow_paid_broadcast",
    }
)
_JSON_PARAMS = frozenset(
    {
        "reply_parameters",
        "reply_markup",
        "entities",
        "commands",
        "allowed_updates",
        "scope",
        "link_preview_options",
        "caption_entities",
    }
)
_TRUE_WORDS = frozenset({"true", "1", "yes"})


class ApiError(Exception):
    """A Bot API error answer: HTTP status, description and optional response parameters."""

    def __init__(
        self, status: int, description: str, parameters: dict[str, Any] | None = None
    ) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters

    def to_response(self) -> web.Response:
        """Render the error the way the Bot API does: ok=false, error_code, description."""
        body: dict[str, Any] = {
            "ok": False,
            "error_code": self.status,
            "description": self.description,
        }
        if self.parameters:
            body["parameters"] = self.parameters
        return web.json_response(body, status=self.status)


def bad_request(reason: str) -> ApiError:
    """Return the 400 error Telegram sends as "Bad Request: <reason>"."""
    return ApiError(400, f"Bad Request: {reason}")


def ok_response(result: Any) -> web.Response:
    """Wrap a method's result in the Bot API's success envelope."""
    return web.json_response({"ok": True, "result": result})


async def read_params(request: web.Request) -> Params:
    """Collect a request's parameters from its query string and body, in any accepted encoding."""
    raw: dict[str, Any] = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError as error:
                raise bad_request("can't parse JSON request body") from error
            if not isinstance(body, dict):
                raise bad_request("JSON request body must be an object")
            raw.update(body)
        elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            form = await request.post()
            for name, value in form.items():
                if isinstance(value, web.FileField):
                    raw[name] = UploadedFile(value.filename, value.content_type, value.file.read())
                elif isinstance(value, bytes | bytearray):
                    raw[name] = bytes(value).decode("utf-8", "replace")
                else:
                    raw[name] = value
    return decode_params(raw)


def decode_params(raw: dict[str, Any]) -> Params:
    """Give known parameters their API types; other values pass through unchanged."""
    decoded: Params = {}
    for name, value in raw.items():
        if isinstance(value, str) and name in _INTEGER_PARAMS:
            decoded[name] = _as_integer(value)
        elif isinstance(value, str) and name in _BOOLEAN_PARAMS:
            decoded[name] = value.strip().lower() in _TRUE_WORDS
        elif isinstance(value, str) and name in _JSON_PARAMS:
            try:
                decoded[name] = json.loads(value)
            except ValueError as error:
                readable = name.replace("_", " ")
                raise bad_request(f"can't parse {readable} JSON object") from error
        else:
            decoded[name] = value
    return decoded


def _as_integer(value: str) -> int | str:
    """Parse an integer parameter; a non-number (a channel's "@name") stays a string."""
    try:
        return int(value)
    except ValueError:
        try:
            return int(float(value))
        except ValueError:
            return value


def int_param(params: Params, name: str, default: int | None = None) -> int:
    """Return an integer parameter, or raise the 400 Telegram gives for a missing/wrong one."""
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None:
            raise bad_request(f"{name} is empty")
        raise bad_request(f"invalid {name} specified")
    return value
