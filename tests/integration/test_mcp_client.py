"""MCP client against a real stdio server (the SDK's own server API) run as a child process:
tools listed as <server>__<tool>, results as text, a killed server and a slow tool."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

import pytest

from agent.tools import ToolRegistry
from agent.tools.mcp import McpServerSpec, McpToolProvider, start_servers

NOTES_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "notes_server.py"


def notes_spec(pid_file: Path, **overrides) -> McpServerSpec:
    values = {
        "name": "notes",
        "command": sys.executable,
        "args": (str(NOTES_SERVER),),
        "env": {"NOTES_PID_FILE": str(pid_file)},
        "timeout_seconds": 60.0,  # a call that waited it out would fail the guards below
    }
    values.update(overrides)
    return McpServerSpec(**values)


@pytest.fixture
async def notes(tmp_path):
    pid_file = tmp_path / "notes.pid"
    [connection] = await start_servers([notes_spec(pid_file)], wait_seconds=20)
    registry = ToolRegistry()
    registry.add_provider(McpToolProvider(connection).for_session())
    yield connection, registry, pid_file
    await connection.aclose()


async def test_server_tools_are_offered_as_server__tool_in_a_stable_order(notes):
    connection, registry, _ = notes
    assert connection.state == "ready"
    assert registry.names() == [
        "notes__fail",
        "notes__huge",
        "notes__picture",
        "notes__read",
        "notes__retool",
        "notes__slow",
        "notes__write",
    ]
    read = next(s for s in registry.schemas() if s["name"] == "notes__read")
    assert read["input_schema"]["required"] == ["name"]


async def test_results_text_image_placeholder_and_error(notes):
    _, registry, _ = notes
    assert await registry.call("notes__read", {"name": "shopping"}) == "milk, eggs, bread"
    assert (await registry.call("notes__picture", {})).startswith("[image: image/png, ")
    assert (await registry.call("notes__fail", {"reason": "boom"})).startswith("Error: ")


async def test_a_killed_server_answers_with_an_error_at_once_then_reconnects(notes):
    connection, registry, pid_file = notes
    names_before = registry.schemas()
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    # Not waiting out the call's timeout (60 s): the guard fails the test if it did.
    async with asyncio.timeout(30):
        failed = await registry.call("notes__read", {"name": "shopping"})
    assert failed.startswith("Error: ")
    assert registry.schemas() == names_before
    await asyncio.wait_for(connection.wait_connected(2), 20)
    assert registry.schemas() == names_before
    assert await registry.call("notes__read", {"name": "shopping"}) == "milk, eggs, bread"


async def test_a_call_slower_than_the_timeout_is_an_error_in_time(tmp_path):
    [connection] = await start_servers(
        [notes_spec(tmp_path / "pid", timeout_seconds=0.5)], wait_seconds=20
    )
    try:
        registry = ToolRegistry()
        registry.add_provider(McpToolProvider(connection).for_session())
        # The tool sleeps 30 s: the guard (half of that) fails the test if the call waited
        # for the tool instead of giving up at its own timeout.
        async with asyncio.timeout(15):
            result = await registry.call("notes__slow", {"seconds": 30})
        assert result == "Error: notes__slow did not answer within 0.5 s"
        assert await registry.call("notes__read", {"name": "shopping"}) == "milk, eggs, bread"
    finally:
        await connection.aclose()


def server_events(events: Path) -> list[str]:
    """What the notes server's ``slow`` tool wrote to its events file so far."""
    return events.read_text().splitlines() if events.exists() else []


async def wait_for_event(events: Path, event: str) -> None:
    async with asyncio.timeout(20):
        # A child process's file offers no event to wait on: poll it.
        while event not in server_events(events):  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_a_cancelled_caller_cancels_the_call_on_the_server_and_the_next_call_works(
    tmp_path,
):
    events = tmp_path / "events"
    env = {"NOTES_PID_FILE": str(tmp_path / "pid"), "NOTES_EVENTS_FILE": str(events)}
    [connection] = await start_servers([notes_spec(tmp_path / "pid", env=env)], wait_seconds=20)
    try:
        registry = ToolRegistry()
        registry.add_provider(McpToolProvider(connection).for_session())
        call = asyncio.create_task(registry.call("notes__slow", {"seconds": 600}))
        await wait_for_event(events, "slow started")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await wait_for_event(events, "slow cancelled")
        assert await registry.call("notes__read", {"name": "shopping"}) == "milk, eggs, bread"
        assert connection.connections == 1
    finally:
        await connection.aclose()


async def test_a_server_that_cannot_start_is_logged_once_and_offers_nothing(caplog):
    spec = McpServerSpec(name="broken", command="/nonexistent/mcp-server", env={"TOKEN": "s3cret"})
    [connection] = await start_servers([spec], wait_seconds=10)
    try:
        assert connection.state == "reconnecting" and connection.last_error
        provider = McpToolProvider(connection)
        assert provider.tools() == []
        assert (await connection.call("x", {})).startswith("Error: the broken tool server")
        warnings = [r for r in caplog.records if "broken" in r.getMessage()]
        assert len(warnings) == 1 and "s3cret" not in caplog.text
    finally:
        await connection.aclose()


async def test_a_changed_tool_list_reaches_a_session_only_at_its_next_cold_point(notes):
    connection, registry, _ = notes
    before = registry.schemas()
    listed = connection.listings
    assert await registry.call("notes__retool", {"add": "extra"}) == "tools changed"
    await asyncio.wait_for(connection.wait_listed(listed + 1), 10)
    assert registry.schemas() == before, "mid-visit the prefix stays as it was"
    assert registry.refresh() is True
    assert "notes__extra" in registry.names()
    assert await registry.call("notes__extra", {"text": "hi"}) == "hi"


async def test_a_removed_tool_stays_listed_until_the_cold_point_and_its_calls_fail(notes):
    connection, registry, _ = notes
    before = registry.schemas()
    listed = connection.listings
    assert await registry.call("notes__retool", {"remove": "write"}) == "tools changed"
    await asyncio.wait_for(connection.wait_listed(listed + 1), 10)
    assert registry.schemas() == before
    failed = await registry.call("notes__write", {"name": "a", "text": "b"})
    assert failed == "Error: the notes server no longer offers write"
    registry.refresh()
    assert "notes__write" not in registry.names()


async def test_a_servers_stderr_goes_to_a_debug_logger_not_to_the_daemons_stderr(
    tmp_path, caplog, capfd
):
    caplog.set_level(logging.DEBUG, logger="agent.tools.mcp.server")
    [connection] = await start_servers([notes_spec(tmp_path / "pid")], wait_seconds=20)
    await connection.aclose()
    [record] = [r for r in caplog.records if r.getMessage() == "notes server starting"]
    assert record.name == "agent.tools.mcp.server.notes" and record.levelno == logging.DEBUG
    assert "notes server starting" not in capfd.readouterr().err
