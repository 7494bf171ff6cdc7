"""What people see of real third-party servers that fail or are misconfigured (``hermes mcp
list``, ``doctor``, ``/tools``, approvals) and how their results reach the model, through
the real daemon and emulators with servers as ``./dev.sh test`` installs them."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.doctor import run_doctor
from gateway.cli.mcp import run_mcp_list
from gateway.config.schema import Config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.fixtures.mcp_servers.reference_servers import everything_stdio, python_server
from tests.gateway.conftest import ALICE, gateway_config
from tests.gateway.test_mcp_reference_servers import (
    ODD_NAMES_SERVER,
    RECONNECT_WAIT_SECONDS,
    with_servers,
)
from tests.gateway.test_mcp_tools import send, tool_results
from tests.gateway.test_tool_approvals import answered, button, prompt_of

BAD_ZONE = "Mars/Olympus"


def mars_time() -> dict[str, Any]:
    """mcp-server-time with a timezone it refuses: it exits 1 with the reason on stderr."""
    return python_server("mcp-server-time", "--local-timezone", BAD_ZONE)


async def test_mcp_list_and_doctor_show_a_failed_servers_exit_code_and_stderr(
    tmp_path: Path, anthropic: AnthropicEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = {"mars": mars_time(), "fetch": python_server("mcp-server-fetch")}
    config = with_servers(gateway_config(tmp_path, anthropic), servers)
    assert await run_mcp_list(config) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:7] == ["mars", "stdio", "could", "not", "start", "0", "tools"]
    assert lines[0].endswith("the server exited with code 1")
    assert "    exit code 1" in lines
    assert any(line.startswith("    stderr: ") and BAD_ZONE in line for line in lines)
    [fetch] = [line for line in lines if line.startswith("fetch")]
    assert fetch.split()[:5] == ["fetch", "stdio", "ready", "1", "tool"], "1 tool, not 1 tools"

    await run_doctor(config)
    out = capsys.readouterr().out.splitlines()
    [mars] = [line for line in out if "MCP server mars" in line]
    assert mars.startswith("[warn] MCP server mars: could not start: the server exited with code")
    assert "exit code 1" in mars and BAD_ZONE in mars
    assert "[  ok] MCP server fetch: ready, 1 tool" in out


def typo_config(base: Config) -> Config:
    time = python_server("mcp-server-time", "--local-timezone", "UTC")
    return with_servers(base, {"time": {**time, "ask": ["get_curent_time"]}})


async def test_an_ask_entry_naming_no_tool_is_warned_of_and_every_call_still_asks(
    tmp_path: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = typo_config(gateway_config(tmp_path, anthropic, telegram=telegram))
    await run_mcp_list(config)
    assert (
        "    warning: ask: 'get_curent_time' names no tool of the server (every call asks first)"
        in capsys.readouterr().out.splitlines()
    )
    await run_doctor(config)
    assert any(
        line.startswith("[warn] MCP server time: ask: 'get_curent_time' names no tool")
        for line in capsys.readouterr().out.splitlines()
    )
    async with open_app(config, with_tools=True) as app:
        [odd] = app.services.tool_providers
        async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
            await odd.connection.wait_connected()
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            tools = await send(gateway, telegram, "/tools")
            call = '[[tool:time__get_current_time {"timezone": "UTC"}]] what time is it?'
            update = telegram.push_message(ALICE, call)
            prompt = await prompt_of(telegram, len(telegram.sent_messages(ALICE)))
            telegram.press_button(ALICE, prompt["message_id"], button(prompt, "Allow once"))
            reply = await answered(gateway, telegram, update)
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert "time (ready): convert_time (asks first), get_current_time (asks first)" in tools
    assert "warning: ask: 'get_curent_time' names no tool of the server" in tools
    assert "time__get_current_time" in prompt["text"], "the call asked in doubt"
    assert '"timezone": "UTC"' in reply


async def test_results_reach_the_model_as_text_image_blocks_and_error_flags(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    time = python_server("mcp-server-time", "--local-timezone", "UTC")
    servers = {"everything": everything_stdio(), "time": time}
    config = with_servers(gateway_config(tmp_path, anthropic, telegram=telegram), servers)
    calls = [
        "[[tool:everything__get-tiny-image {}]] show me",
        '[[tool:everything__get-structured-content {"location": "New York"}]] weather?',
        f'[[tool:time__get_current_time {{"timezone": "{BAD_ZONE}"}}]] time on Mars?',
        '[[tool:everything__get-resource-links {"count": 1}]] links?',
    ]
    results = []
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            for call in calls:
                await send(gateway, telegram, call)
                results.append(tool_results(anthropic, len(anthropic.requests) - 1)[-1])
        finally:
            await gateway.stop(grace_seconds=2.0)
    image, structured, error, links = results
    blocks = image["content"]
    assert [b["type"] for b in blocks] == ["text", "image"]
    assert blocks[1]["source"]["media_type"] == "image/png", "the bad-checksum PNG is read"
    assert all("iVBOR" not in str(b.get("text", "")) for b in blocks), "no base64 as text"
    text = str(structured["content"])
    assert text.count("temperature") == 1, "the structured copy of the text is left out"
    assert error.get("is_error") is True
    assert str(error["content"]).startswith("Error: ") and "Error: Error" not in str(error)
    assert "is_error" not in image and "is_error" not in structured
    assert "[resource link: demo://resource/" in str(links["content"])


async def test_a_tool_with_a_schema_no_api_takes_is_named_in_mcp_list_doctor_and_tools(
    tmp_path: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    capsys: pytest.CaptureFixture[str],
) -> None:
    servers = {"odd": {"command": sys.executable, "args": [str(ODD_NAMES_SERVER)]}}
    config = with_servers(gateway_config(tmp_path, anthropic, telegram=telegram), servers)
    warning = (
        "tool 'bad_schema' left out: its input schema is not valid JSON Schema "
        "(at properties/text/type: 'strnig' is not valid under any of the given schemas)"
    )
    await run_mcp_list(config)
    assert f"    warning: {warning}" in capsys.readouterr().out.splitlines()
    await run_doctor(config)
    assert f"[warn] MCP server odd: {warning}" in capsys.readouterr().out.splitlines()
    async with open_app(config, with_tools=True) as app:
        [odd] = app.services.tool_providers
        async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
            await odd.connection.wait_connected()
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            tools = await send(gateway, telegram, "/tools")
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert f"warning: {warning}" in tools
    assert "odd (ready): files.read, summarise_the_quarterly_report" in tools


async def test_a_stdio_server_that_dies_while_idle_is_noticed_and_restarted_without_a_call(
    tmp_path: Path, anthropic: AnthropicEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    config = with_servers(gateway_config(tmp_path, anthropic), {"everything": everything_stdio()})
    async with open_app(config, with_tools=True) as app:
        [everything] = app.services.tool_providers
        assert everything.connection.state == "ready"
        os.kill(child_pid("server-everything"), signal.SIGKILL)
        async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
            await everything.connection.wait_connected(2)
    [lost] = [r.getMessage() for r in caplog.records if "lost its connection" in r.getMessage()]
    assert lost.endswith("the server exited with code -9 (retrying)")


def child_pid(marker: str) -> int:
    """The pid of this process's child whose command line contains ``marker``."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and marker in cmdline:
            return int(proc.name)
    raise LookupError(f"no child process runs {marker}")


async def test_what_a_failing_server_prints_is_shown_with_its_secrets_masked(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DB_TOKEN", "env-token-SECRET-42")
    echo_and_fail = 'echo "cannot connect with $* token=$DB_TOKEN" >&2; exit 3'
    server = {
        "command": "sh",
        "args": [
            "-c",
            echo_and_fail,
            "sh",
            "postgresql://app:pw-SECRET-7@db/x",
            "--api-key",
            "k-SECRET-9",
        ],
        "env": ["DB_TOKEN"],
    }
    config = with_servers(gateway_config(tmp_path, anthropic), {"db": server})
    await run_mcp_list(config)
    out = capsys.readouterr().out
    assert "    exit code 3" in out.splitlines()
    assert "stderr: cannot connect with postgresql://app:***@db/x --api-key ***" in out
    for secret in ("pw-SECRET-7", "k-SECRET-9", "env-token-SECRET-42"):
        assert secret not in out
