"""HTTP control API of the Anthropic emulator, for a test that drives it from another process.

- ``POST /_emulator/clock/advance {"seconds": x}`` -> ``{"now": t}``
- ``POST /_emulator/clock/set {"now": t}`` -> ``{"now": t}`` (forward only, e.g. to a message's
  epoch time in a replay; an earlier time is a 400)
- ``GET /_emulator/stats`` -> the `EmulatorStats` as JSON
- ``GET /_emulator/requests`` -> every `RequestRecord` as JSON
- ``POST /_emulator/faults {"kind": ..., "count": ..., ...}`` -> ``{"pending": n}``
  (the fields are `AnthropicEmulator.inject_fault`'s arguments)
- ``POST /_emulator/context_length {"value": n}`` -> ``{"context_length": n}``

A malformed control call gets a 400 with ``{"error": "..."}``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from sandbox.anthropic_api import AnthropicEmulator

CONTROL_PREFIX = "/_emulator"

_Handler = Callable[[web.Request], Awaitable[web.Response]]


class _BadControlCall(Exception):
    """A control request whose payload is missing or wrong."""


async def _payload(request: web.Request) -> dict[str, Any]:
    try:
        payload = json.loads(await request.read() or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as problem:
        raise _BadControlCall(f"body is not JSON: {problem}") from None
    if not isinstance(payload, dict):
        raise _BadControlCall("body must be a JSON object")
    return payload


def _guarded(handler: _Handler) -> _Handler:
    """Turn a bad payload into a 400 instead of a server error."""

    async def guarded(request: web.Request) -> web.Response:
        try:
            return await handler(request)
        except (_BadControlCall, KeyError, TypeError, ValueError) as problem:
            return web.json_response({"error": str(problem)}, status=400)

    return guarded


def add_control_routes(app: web.Application, emulator: AnthropicEmulator) -> None:
    """Register the control endpoints of ``emulator`` on ``app``."""

    async def advance_clock(request: web.Request) -> web.Response:
        payload = await _payload(request)
        emulator.clock.advance(float(payload["seconds"]))
        return web.json_response({"now": emulator.clock.now()})

    async def set_clock(request: web.Request) -> web.Response:
        payload = await _payload(request)
        emulator.clock.advance_to(float(payload["now"]))
        return web.json_response({"now": emulator.clock.now()})

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(emulator.stats.to_dict())

    async def requests(request: web.Request) -> web.Response:
        return web.json_response([record.to_dict() for record in emulator.requests])

    async def faults(request: web.Request) -> web.Response:
        payload = await _payload(request)
        emulator.inject_fault(**payload)
        return web.json_response({"pending": len(emulator.pending_faults)})

    async def context_length(request: web.Request) -> web.Response:
        payload = await _payload(request)
        emulator.context_length = int(payload["value"])
        return web.json_response({"context_length": emulator.context_length})

    app.router.add_post(f"{CONTROL_PREFIX}/clock/advance", _guarded(advance_clock))
    app.router.add_post(f"{CONTROL_PREFIX}/clock/set", _guarded(set_clock))
    app.router.add_get(f"{CONTROL_PREFIX}/stats", _guarded(stats))
    app.router.add_get(f"{CONTROL_PREFIX}/requests", _guarded(requests))
    app.router.add_post(f"{CONTROL_PREFIX}/faults", _guarded(faults))
    app.router.add_post(f"{CONTROL_PREFIX}/context_length", _guarded(context_length))
