"""What people see of the MCP servers: ``/tools`` in the chat, the line of ``/status``,
``hermes mcp list`` and ``hermes doctor``, with one working stdio server (the SDK's own server
API) and one whose command does not exist."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from gateway.cli.doctor import run_doctor
from gateway.cli.mcp import run_mcp_list
from gateway.config.schema import Config, load_config, parse_config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config
from tests.gateway.test_mcp_tools import NOTES_SERVER, PID_ENV, send


def two_servers(base: Config, tmp_path: Path) -> Config:
    data = base.model_dump(mode="json")
    notes = {"command": sys.executable, "args": [str(NOTES_SERVER)], "env": [PID_ENV]}
    data["mcp"] = {
        "servers": {
            "notes": {**notes, "ask": ["write"]},
            "broken": {"command": str(tmp_path / "no-such-server")},
        }
    }
    return parse_config(data)


@pytest.fixture(autouse=True)
def pid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "notes.pid"
    monkeypatch.setenv(PID_ENV, str(path))
    return path


async def test_tools_lists_the_chats_tools_by_server_with_approval_and_state(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    admins = {"admin_users": [ALICE]}
    base = gateway_config(tmp_path, anthropic, telegram=telegram, telegram_settings=admins)
    async with open_app(two_servers(base, tmp_path), with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            tools = await send(gateway, telegram, "/tools")
            status = await send(gateway, telegram, "/status")
        finally:
            await gateway.stop(grace_seconds=2.0)
    lines = tools.splitlines()
    assert lines[0] == "Tools in this chat:"
    assert lines[1] == "built-in: calculator, current_time, memory, recall, schedule, tool_output"
    assert lines[2] == (
        "notes (ready): fail, huge, picture, read, retool, slow, write (asks first)"
    )
    assert len(lines) == 3, "a server that never listed offers nothing"
    assert (
        "MCP servers: notes ready, 7 tools; broken could not start (FileNotFoundError: " in status
    )


async def test_mcp_list_and_doctor_show_the_server_that_could_not_start(
    tmp_path: Path, anthropic: AnthropicEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    config = two_servers(gateway_config(tmp_path, anthropic), tmp_path)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    assert await run_mcp_list(load_config(str(config_file))) == 0
    notes, broken = capsys.readouterr().out.splitlines()
    assert notes.split()[:5] == ["notes", "stdio", "ready", "7", "tools"]
    assert broken.split()[:6] == ["broken", "stdio", "could", "not", "start", "0"]
    assert "FileNotFoundError: " in broken, "the last error is shown"

    await run_doctor(config)
    out = capsys.readouterr().out.splitlines()
    assert "[  ok] MCP server notes: ready, 7 tools" in out
    [line] = [line for line in out if "MCP server broken" in line]
    assert line.startswith("[warn] MCP server broken: could not start: ")
    assert line.endswith("(the bot answers without it)")
