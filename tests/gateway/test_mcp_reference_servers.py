"""MCP through the real daemon (Telegram emulator -> gateway -> agent loop -> Anthropic
emulator) with real third-party servers as ``./dev.sh test`` installs them: server-everything
from npm over stdio and Streamable HTTP, ``mcp-server-time`` and ``mcp-server-fetch`` from PyPI,
and the faults a new user meets with them in the first hour."""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.config.schema import Config, parse_config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.fixtures.mcp_servers.odd_names_server import LONG_NAME
from tests.fixtures.mcp_servers.reference_servers import (
    everything_over_http,
    everything_stdio,
    python_server,
)
from tests.gateway.conftest import gateway_config
from tests.gateway.test_mcp_tools import offered, send, tool_results

ODD_NAMES_SERVER = (
    Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "odd_names_server.py"
)
EVERY_PROVIDER_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
LONG_SERVER = "everything_reference_server_with_a_long_name"
"""With ``__get-annotated-message`` its tool names run past 64 characters."""
RECONNECT_WAIT_SECONDS = 30.0
"""A guard against hangs while a server comes back (it is back within a few seconds)."""


def with_servers(base: Config, servers: dict[str, dict[str, Any]]) -> Config:
    data = base.model_dump(mode="json")
    data["mcp"] = {"servers": servers}
    return parse_config(data)


def named(names: list[str], prefix: str) -> str:
    """The one offered name that starts with ``prefix``."""
    [name] = [n for n in names if n.startswith(prefix)]
    return name


async def test_tools_with_names_no_api_takes_are_mapped_and_the_bot_answers_with_every_tool(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    servers = {
        "odd": {"command": sys.executable, "args": [str(ODD_NAMES_SERVER)]},
        LONG_SERVER: everything_stdio(),
        "time": python_server("mcp-server-time", "--local-timezone", "Europe/Paris"),
    }
    config = with_servers(gateway_config(tmp_path, anthropic, telegram=telegram), servers)
    async with open_app(config, with_tools=True) as app:
        async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
            for provider in app.services.tool_providers:
                await provider.connection.wait_connected()
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            hello = await send(gateway, telegram, "hello")
            names = offered(anthropic)[0]
            dotted = named(names, "odd__files_read_")
            long_tool = named(names, "odd__summarise_the_quarterly_report")
            echo = named(names, f"{LONG_SERVER}__echo")
            read = await send(gateway, telegram, f'[[tool:{dotted} {{"path": "a.txt"}}]] read')
            summary = await send(gateway, telegram, f"[[tool:{long_tool} {{}}]] sum it up")
            echoed = await send(gateway, telegram, f'[[tool:{echo} {{"message": "hi"}}]] echo')
            now = await send(
                gateway, telegram, '[[tool:time__get_current_time {"timezone": "UTC"}]] time?'
            )
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert hello.startswith("Noted: hello")
    assert all(r.status == 200 for r in anthropic.requests), "no request was refused"
    assert all(EVERY_PROVIDER_NAME.fullmatch(n) for r in offered(anthropic) for n in r)
    assert all(names == r for r in offered(anthropic)), "the same names in every request"
    assert f"{LONG_SERVER}__get-sum" in names and "time__convert_time" in names
    annotated = named(names, f"{LONG_SERVER}__get-an")
    assert len(annotated) == 64, "cut to the limit, with a hash to keep it unique"
    assert len(long_tool) == 64 and LONG_NAME not in long_tool
    assert "hello from the dotted tool" in read, "the call is mapped back to files.read"
    assert not any("bad_schema" in n for n in names), "left out of every request"
    assert "summary from the long-named tool" in summary
    assert "Echo: hi" in echoed
    assert '"timezone": "UTC"' in now


async def test_names_are_the_same_after_a_restart(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    servers = {"odd": {"command": sys.executable, "args": [str(ODD_NAMES_SERVER)]}}
    config = with_servers(gateway_config(tmp_path, anthropic, telegram=telegram), servers)
    runs = []
    for _run in range(2):
        async with open_app(config, with_tools=True) as app:
            [odd] = app.services.tool_providers
            async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
                await odd.connection.wait_connected()
            runs.append(sorted(odd.model_names().items()))
            kept = await app.repo.load_mcp_tool_lists()
    assert runs[0] == runs[1]
    kept_names = sorted((t.model_name, t.name) for t in kept["odd"] if t.name != "bad_schema")
    assert kept_names == runs[0], "kept with the list"
    assert sorted(tool for _name, tool in runs[0]) == ["files.read", LONG_NAME]


async def test_a_killed_http_server_fails_the_next_call_at_once_and_its_tools_come_back(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    echo = '[[tool:everything__echo {"message": "ping"}]] echo'
    async with everything_over_http() as server:
        # A call timeout far above the test's own guards: an answer can only come from the
        # connection failing, not from the timeout.
        servers = {"everything": {"url": server.url, "timeout_seconds": 600}}
        config = with_servers(gateway_config(tmp_path, anthropic, telegram=telegram), servers)
        async with open_app(config, with_tools=True) as app:
            [everything] = app.services.tool_providers
            gateway = Gateway(app, hold_seconds=0.05)
            await gateway.start()
            try:
                assert "Echo: ping" in await send(gateway, telegram, echo)
                await server.kill()
                failed = await send(gateway, telegram, echo)  # guarded: 10 s at most
                failed_result = tool_results(anthropic, len(anthropic.requests) - 1)
                await server.start()
                async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
                    await everything.connection.wait_connected(2)
                back = await send(gateway, telegram, echo)
            finally:
                await gateway.stop(grace_seconds=2.0)
    assert "went away during the call" in failed
    assert failed_result[-1].get("is_error") is True, "the model is told it failed"
    assert "Echo: ping" in back
    assert len(everything.tools()) >= 10, "its tools were offered throughout"


async def test_a_server_that_never_answers_the_handshake_ends_failed_with_its_cause(
    tmp_path: Path, anthropic: AnthropicEmulator
) -> None:
    from tests.fixtures.mcp_servers.reference_servers import silent_http_endpoint

    async with silent_http_endpoint() as url:
        servers = {"hung": {"url": url, "startup_timeout_seconds": 0.5}}
        config = with_servers(gateway_config(tmp_path, anthropic), servers)
        async with open_app(config, with_tools=True) as app:
            [hung] = app.services.tool_providers
            async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
                await hung.connection.listed.wait()
            state, cause = hung.connection.state, hung.connection.last_error
    assert state == "reconnecting"
    assert cause == "HandshakeTimeout: no answer to the handshake within 0.5 s"


async def test_junk_on_a_servers_stdout_is_one_warning_without_its_secret(
    tmp_path: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    everything = everything_stdio()
    noisy = 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "debug $i token=tok-Secret-991"; done'
    script = f"{noisy}; exec {everything['command']} {' '.join(everything['args'])}"
    servers = {"noisy": {"command": "sh", "args": ["-c", script]}}
    config = with_servers(gateway_config(tmp_path, anthropic, telegram=telegram), servers)
    caplog.set_level(logging.INFO)
    async with open_app(config, with_tools=True) as app:
        [noisy_server] = app.services.tool_providers
        assert noisy_server.connection.state == "ready"
        details = noisy_server.connection.failure_details()
    junk = [r for r in caplog.records if "not MCP messages" in r.getMessage()]
    assert len(junk) == 1 and junk[0].levelno == logging.WARNING
    assert "tok-Secret-991" not in caplog.text
    assert details == ["12 stdout lines were not MCP messages (ignored)"]
