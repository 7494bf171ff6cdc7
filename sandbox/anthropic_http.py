"""The Messages API's HTTP edges: its error bodies and how a request proves its key."""

from __future__ import annotations

from typing import Any

from aiohttp import web


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def error_response(
    status: int, error_type: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    return web.json_response(error_body(error_type, message), status=status, headers=headers)


def has_credentials(request: web.Request, api_key: str | None) -> bool:
    """A key is present (and, when the emulator was given one, it is that key)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    sent = request.headers.get("x-api-key", "").strip() or (
        token.strip() if scheme.lower() == "bearer" else ""
    )
    return bool(sent) and (api_key is None or sent == api_key)
