"""MCP over Streamable HTTP: the SDK's own server on 127.0.0.1 behind a bearer token, the
token given in config.yaml as ``Bearer ${NOTES_TOKEN}`` and filled from the environment."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.config.schema import Config, parse_config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.fixtures.mcp_servers.http_server import notes_over_http
from tests.gateway.conftest import gateway_config
from tests.gateway.test_mcp_tools import send

TOKEN = "s3cret-http-token"


def http_config(base: Config, url: str) -> Config:
    data = base.model_dump(mode="json")
    server = {"url": url, "headers": {"Authorization": "Bearer ${NOTES_TOKEN}"}}
    data["mcp"] = {"servers": {"web_notes": server}}
    return parse_config(data)


async def test_a_streamable_http_server_is_reached_with_the_header_filled_from_the_env(
    tmp_path: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", TOKEN)
    caplog.set_level(logging.INFO)
    async with notes_over_http(TOKEN) as (url, guard):
        config = http_config(gateway_config(tmp_path, anthropic, telegram=telegram), url)
        async with open_app(config, with_tools=True) as app:
            [notes] = app.services.tool_providers
            assert notes.connection.state == "ready"
            gateway = Gateway(app, hold_seconds=0.05)
            await gateway.start()
            try:
                read = '[[tool:web_notes__read {"name": "shopping"}]] my list?'
                reply = await send(gateway, telegram, read)
            finally:
                await gateway.stop(grace_seconds=2.0)
    assert "milk, eggs, bread" in reply
    assert guard.refused == 0
    assert TOKEN not in caplog.text


async def test_a_wrong_token_is_a_server_that_could_not_start_and_never_logged(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "wrong-token")
    caplog.set_level(logging.DEBUG)
    async with notes_over_http(TOKEN) as (url, guard):
        config = http_config(gateway_config(tmp_path, anthropic), url)
        async with open_app(config, with_tools=True) as app:
            [notes] = app.services.tool_providers
            assert notes.connection.state == "reconnecting" and notes.connection.connections == 0
            assert notes.tools() == []
    assert guard.refused >= 1
    assert "wrong-token" not in caplog.text
