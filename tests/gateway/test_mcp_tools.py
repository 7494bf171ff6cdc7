"""MCP tools through the real daemon path: Telegram emulator -> gateway -> agent loop ->
Anthropic emulator, with a real stdio MCP server (the SDK's own server API) as a child."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from agent.tokens import count_text_tokens
from gateway.config.schema import Config, parse_config
from gateway.runtime.app import App, open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.fixtures.mcp_servers.notes_server import PIXEL_PNG
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound

NOTES_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "notes_server.py"
PID_ENV = "NOTES_PID_FILE"
EVENTS_ENV = "NOTES_EVENTS_FILE"
WAIT_SECONDS = 20.0


def mcp_config(base: Config, **server: object) -> Config:
    data = base.model_dump(mode="json")
    env = [PID_ENV, EVENTS_ENV]
    settings = {"command": sys.executable, "args": [str(NOTES_SERVER)], "env": env}
    data["mcp"] = {"servers": {"notes": {**settings, **server}}}
    return parse_config(data)


async def send(gateway: Gateway, telegram: TelegramEmulator, text: str) -> str:
    """Alice sends ``text``; the last message the bot answered with."""
    before = len(telegram.sent_messages(ALICE))
    update = telegram.push_message(ALICE, text)
    await settled_inbound(gateway, "telegram", message_key(update))
    return [m["text"] for m in telegram.sent_messages(ALICE)[before:]][-1]


def offered(anthropic: AnthropicEmulator) -> list[list[str]]:
    """The tool names of every request, in request order."""
    return [[t["name"] for t in r.body.get("tools", [])] for r in anthropic.requests]


def tool_results(anthropic: AnthropicEmulator, index: int) -> list[dict[str, object]]:
    """The tool_result blocks of request ``index`` (in message order)."""
    return [
        block
        for message in anthropic.requests[index].body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


async def stored_tool_content(app: App) -> object:
    """The content of Alice's last tool result as the store holds it (blobs not read)."""
    [session] = await app.repo.list_sessions(key=f"telegram:{ALICE}")
    stored = await app.repo.load_context(session.id)
    return [m for m in stored if m["role"] == "tool"][-1]["content"]


def kill_server(pid_file: Path) -> None:
    """SIGKILL the notes server (its pid is in the file it wrote at start)."""
    os.kill(int(pid_file.read_text()), signal.SIGKILL)


def server_events(events: Path) -> list[str]:
    """What the notes server wrote to its events file so far."""
    return events.read_text().splitlines() if events.exists() else []


async def wait_for_event(events: Path, event: str) -> None:
    """Return once the notes server has written ``event`` to its events file."""
    async with asyncio.timeout(WAIT_SECONDS):
        # A child process's file offers no event to wait on: poll it.
        while event not in server_events(events):  # noqa: ASYNC110
            await asyncio.sleep(0.02)


@pytest.fixture
def events_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "notes.events"
    monkeypatch.setenv(EVENTS_ENV, str(path))
    return path


@pytest.fixture
def pid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "notes.pid"
    monkeypatch.setenv(PID_ENV, str(path))
    return path


async def test_the_model_reads_a_note_and_survives_the_server_being_killed(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    config = mcp_config(gateway_config(tmp_path, anthropic, telegram=telegram))
    async with open_app(config, with_tools=True) as app:
        [notes] = app.services.tool_providers
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            read = '[[tool:notes__read {"name": "shopping"}]] what is on my list?'
            assert "milk, eggs, bread" in await send(gateway, telegram, read)

            kill_server(pid_file)
            failed = await send(gateway, telegram, read)
            assert "went away" in failed or "unavailable" in failed

            await asyncio.wait_for(notes.connection.wait_connected(2), 20)
            assert "milk, eggs, bread" in await send(gateway, telegram, read)
        finally:
            await gateway.stop(grace_seconds=2.0)
    lists = offered(anthropic)
    assert len(lists) == 6
    assert all(names == lists[0] for names in lists), "every request offers the same tools"
    assert lists[0] == [
        "calculator",
        "current_time",
        "memory",
        "notes__fail",
        "notes__huge",
        "notes__picture",
        "notes__read",
        "notes__retool",
        "notes__slow",
        "notes__write",
        "recall",
        "schedule",
        "tool_output",
    ]


async def test_a_tool_slower_than_its_timeout_gives_an_error_and_the_turn_completes(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    base = gateway_config(tmp_path, anthropic, telegram=telegram)
    config = mcp_config(base, timeout_seconds=0.5)
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            reply = await send(gateway, telegram, '[[tool:notes__slow {"seconds": 60}]] wait')
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert "did not answer within 0.5 s" in reply


async def test_stop_cancels_the_call_on_the_server_and_the_server_answers_the_next_call(
    tmp_path: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    pid_file: Path,
    events_file: Path,
) -> None:
    config = mcp_config(gateway_config(tmp_path, anthropic, telegram=telegram))
    read = '[[tool:notes__read {"name": "shopping"}]] what is on my list?'
    async with open_app(config, with_tools=True) as app:
        [notes] = app.services.tool_providers
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            slow = telegram.push_message(ALICE, '[[tool:notes__slow {"seconds": 600}]] wait')
            await wait_for_event(events_file, "slow started")
            stop = telegram.push_message(ALICE, "/stop")
            await settled_inbound(gateway, "telegram", message_key(stop))
            await settled_inbound(gateway, "telegram", message_key(slow))
            await wait_for_event(events_file, "slow cancelled")
            after_stop = await send(gateway, telegram, "are you there?")
            answer = await send(gateway, telegram, read)
        finally:
            await gateway.stop(grace_seconds=2.0)
    # The emulator answers a request whose last user turn holds tool results with their text:
    # the stopped call's result reached the model as the cancellation stub, in a valid request.
    assert "cancelled before it finished" in after_stop
    assert "milk, eggs, bread" in answer, "the same connection serves the next call"
    assert notes.connection.connections == 1, "no reconnect was needed"
    assert "slow finished" not in server_events(events_file)
    assert [r.status for r in anthropic.requests] == [200] * len(anthropic.requests)


async def test_a_vision_model_gets_the_tools_image_in_its_tool_result_also_after_a_restart(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    config = mcp_config(gateway_config(tmp_path, anthropic, telegram=telegram))
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            await send(gateway, telegram, "[[tool:notes__picture {}]] show me the picture")
        finally:
            await gateway.stop(grace_seconds=2.0)
        stored = await stored_tool_content(app)
    async with open_app(config, with_tools=True) as app:  # the session is read from the store
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            after_restart = await send(gateway, telegram, "what was on it?")
        finally:
            await gateway.stop(grace_seconds=2.0)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    image["source"]["data"] = PIXEL_PNG  # type: ignore[index]
    [answered] = tool_results(anthropic, 1)
    assert answered["content"] == [image]
    [reloaded] = tool_results(anthropic, -1)
    assert reloaded["content"] == [image], "the blob is read back for the next request"
    assert [r.status for r in anthropic.requests] == [200, 200, 200]
    assert after_restart.startswith("Noted: what was on it?")
    assert PIXEL_PNG not in str(stored), "the store keeps the reference, not the bytes"


def image_blocks(anthropic: AnthropicEmulator, index: int) -> list[object]:
    """Every image block of request ``index``, those inside tool results too."""
    found: list[object] = []
    for message in anthropic.requests[index].body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for part in [block, *(nested if isinstance(nested, list) else [])]:
                if part.get("type") == "image":
                    found.append(part)
    return found


async def test_a_compaction_drops_an_old_tool_image_and_the_next_request_is_valid(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    small_window = {"context_length": 8000}  # a tail budget the long remarks overflow
    base = gateway_config(tmp_path, anthropic, telegram=telegram, model_settings=small_window)
    data = base.model_dump(mode="json")
    data["compression"]["protect_last_n"] = 2
    config = mcp_config(parse_config(data))
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            await send(gateway, telegram, "[[tool:notes__picture {}]] show me the picture")
            for n in range(3):
                await send(gateway, telegram, f"note {n}: " + "a long remark " * 200)
            assert (await send(gateway, telegram, "/compress notes")).startswith("Compacted")
            after = await send(gateway, telegram, "and now?")
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert len(image_blocks(anthropic, 1)) == 1, "the image was in context before"
    assert image_blocks(anthropic, -1) == []
    [kept] = tool_results(anthropic, -1)  # in the protected head: the result stays, pruned
    assert kept["content"] == [{"type": "text", "text": "[image: tool result, 1x1]"}]
    assert all(r.status == 200 for r in anthropic.requests)
    assert after.startswith("Noted: and now?")


async def test_a_model_without_vision_reads_the_tools_image_as_a_placeholder(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    base = gateway_config(tmp_path, anthropic, telegram=telegram, model_settings={"vision": False})
    async with open_app(mcp_config(base), with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            reply = await send(gateway, telegram, "[[tool:notes__picture {}]] show me")
        finally:
            await gateway.stop(grace_seconds=2.0)
    [answered] = tool_results(anthropic, 1)
    assert answered["content"] == "[image: image/png, 70 bytes, not shown]"
    assert "[image: image/png, 70 bytes, not shown]" in reply


async def test_a_broken_image_from_a_tool_is_a_placeholder_and_the_request_is_valid(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    config = mcp_config(gateway_config(tmp_path, anthropic, telegram=telegram))
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            await send(gateway, telegram, '[[tool:notes__picture {"broken": true}]] show me')
            after = await send(gateway, telegram, "and now?")
        finally:
            await gateway.stop(grace_seconds=2.0)
    [answered] = tool_results(anthropic, 1)
    assert answered["content"] == "[image: image/png, 9 bytes, not shown]"
    assert [r.status for r in anthropic.requests] == [200, 200, 200]
    assert after.startswith("Noted: and now?")


async def test_after_a_restart_with_the_server_broken_the_same_tools_are_offered(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    base = gateway_config(tmp_path, anthropic, telegram=telegram)
    read = '[[tool:notes__read {"name": "shopping"}]] what is on my list?'
    async with open_app(mcp_config(base), with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            assert "milk, eggs, bread" in await send(gateway, telegram, read)
        finally:
            await gateway.stop(grace_seconds=2.0)

    broken = mcp_config(base, command=str(tmp_path / "no-such-server"))
    async with open_app(broken, with_tools=True) as app:
        [notes] = app.services.tool_providers
        assert notes.connection.state == "reconnecting"
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            failed = await send(gateway, telegram, read)
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert "unavailable" in failed
    first_run, after_restart = anthropic.requests[0].body, anthropic.requests[-1].body
    assert after_restart["tools"] == first_run["tools"], "same names, order and schemas"
    names = [t["name"] for t in after_restart["tools"]]
    assert [name for name in names if name.startswith("notes__")] == [
        "notes__fail",
        "notes__huge",
        "notes__picture",
        "notes__read",
        "notes__retool",
        "notes__slow",
        "notes__write",
    ]


async def test_a_tool_list_change_is_offered_from_the_next_compaction_not_mid_visit(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    small_window = {"context_length": 8000}  # a tail budget the long remarks overflow
    base = gateway_config(tmp_path, anthropic, telegram=telegram, model_settings=small_window)
    data = base.model_dump(mode="json")
    data["compression"]["protect_last_n"] = 2
    config = mcp_config(parse_config(data))
    async with open_app(config, with_tools=True) as app:
        [notes] = app.services.tool_providers
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            listed = notes.connection.listings
            await send(gateway, telegram, '[[tool:notes__retool {"add": "extra"}]] learn')
            await asyncio.wait_for(notes.connection.wait_listed(listed + 1), 10)
            for n in range(3):
                await send(gateway, telegram, f"note {n}: " + "a long remark " * 200)
            mid_visit = len(anthropic.requests)
            assert (await send(gateway, telegram, "/compress notes")).startswith("Compacted")
            await send(gateway, telegram, '[[tool:notes__extra {"text": "hello"}]] try it')
        finally:
            await gateway.stop(grace_seconds=2.0)
    lists = offered(anthropic)
    assert all(names == lists[0] for names in lists[:mid_visit])
    assert "notes__extra" not in lists[0]
    assert "notes__extra" in lists[-1]
    assert lists[-1] == sorted(lists[0] + ["notes__extra"])


async def test_an_admins_only_server_is_offered_to_admins_and_never_to_others(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    bob = 43
    admins = {"admin_users": [ALICE]}
    base = gateway_config(tmp_path, anthropic, telegram=telegram, telegram_settings=admins)
    config = mcp_config(base, users="admins")
    read = '[[tool:notes__read {"name": "shopping"}]] what is on my list?'
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            assert "milk, eggs, bread" in await send(gateway, telegram, read)
            update = telegram.push_message(bob, read, user_id=bob, username="bob")
            await settled_inbound(gateway, "telegram", message_key(update))
        finally:
            await gateway.stop(grace_seconds=2.0)
    [bobs_reply] = [m["text"] for m in telegram.sent_messages(bob)]
    assert "milk" not in bobs_reply, "the model could not call the tool for Bob"
    alice_tools, bob_tools = offered(anthropic)[0], offered(anthropic)[-1]
    assert "notes__read" in alice_tools
    assert [name for name in bob_tools if name.startswith("notes__")] == []


async def test_a_huge_result_reaches_the_model_as_head_and_tail_and_is_paged_by_ref(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator, pid_file: Path
) -> None:
    config = mcp_config(gateway_config(tmp_path, anthropic, telegram=telegram))
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            await send(gateway, telegram, '[[tool:notes__huge {"lines": 20000}]] dump it')
            page = await send(gateway, telegram, '[[tool:tool_output {"ref": 1, "page": 3}]] more')
        finally:
            await gateway.stop(grace_seconds=2.0)
    results = [
        block
        for request in anthropic.requests
        for message in request.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    huge = str(results[0]["content"])
    assert "is kept as ref 1: call tool_output" in huge
    assert count_text_tokens(huge) <= 8000 * 1.1
    assert "[output 1, page 3 of " in page
