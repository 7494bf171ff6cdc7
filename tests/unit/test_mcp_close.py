"""Closing an MCP connection is bounded: an owner task that absorbs the cancel (as a cancel
scope inside an SDK can) is cancelled once more after CLOSE_SECONDS; a shutdown never hangs."""

from __future__ import annotations

import asyncio

import pytest

from agent.tools.mcp import connection
from agent.tools.mcp.connection import McpConnection
from agent.tools.mcp.spec import McpServerSpec


async def test_an_owner_that_absorbed_the_cancel_is_cancelled_again_after_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connection, "CLOSE_SECONDS", 0.2)
    absorbed = asyncio.Event()

    async def stubborn_owner(self: McpConnection) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            absorbed.set()  # and goes on as if nothing happened
        await asyncio.Event().wait()

    monkeypatch.setattr(McpConnection, "_own", stubborn_owner)
    server = McpConnection(McpServerSpec("stubborn", command="unused"))
    server.start()
    await asyncio.sleep(0)
    await asyncio.wait_for(server.aclose(), timeout=5)
    assert absorbed.is_set()
    assert server.state == "closed"
    assert server._task is not None and server._task.cancelled()


async def test_an_owner_that_ends_on_the_first_cancel_is_not_cancelled_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cancels = 0

    async def owner(self: McpConnection) -> None:
        nonlocal cancels
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancels += 1
            await asyncio.sleep(0.05)  # its own clean-up, shielded or not, runs to the end
            raise

    monkeypatch.setattr(McpConnection, "_own", owner)
    server = McpConnection(McpServerSpec("polite", command="unused"))
    server.start()
    await asyncio.sleep(0)
    await server.aclose()
    assert cancels == 1
    assert server._task is not None and server._task.cancelled()
