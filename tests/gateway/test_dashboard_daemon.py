"""``dashboard.enabled``: the running daemon (``hermes gateway run`` as the command line wires
it) serves the dashboard and ``/metrics`` beside the gateway, behind the token, started and
stopped with it; its ``/metrics`` adds the daemon's own series (turn and model latency,
queue depth, live sessions, delivery retries, memory) to the store's totals."""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.cli.main import served_beside_the_gateway
from gateway.config.schema import (
    Config,
    ConfigError,
    DashboardSettings,
    database_url,
    parse_config,
)
from gateway.dashboard.app import create_app
from gateway.dashboard.auth import DashboardAuth
from gateway.dashboard.daemon import dashboard_beside
from gateway.dashboard.server import dashboard_context
from gateway.runtime.daemon import EXIT_OK, EXIT_STARTUP_FAILED, run_gateway
from gateway.store.db import open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config
from tests.gateway.test_mcp_tools import PID_ENV, mcp_config

TOKEN_ENV = "HERMES_TEST_DASHBOARD_TOKEN"
TOKEN = "daemon-dashboard-token-for-tests"
WAIT = 30.0
TURNS = 3
RETRIES = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def with_dashboard(config: Config, **settings: Any) -> Config:
    dashboard = DashboardSettings(enabled=True, token_env=TOKEN_ENV, **settings)
    return config.model_copy(update={"dashboard": dashboard})


@pytest.fixture
def daemon_config(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> Config:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    config = gateway_config(
        tmp_path,
        anthropic,
        telegram=telegram,
        gateway_settings={"delivery_backoff_seconds": 0.05},
    )
    return with_dashboard(config, port=free_port(), metrics_port=free_port())


@asynccontextmanager
async def daemon(config: Config) -> AsyncIterator[asyncio.Task[int]]:
    """The daemon as ``hermes gateway run`` runs it, stopped by SIGTERM at the end."""
    task = asyncio.create_task(run_gateway(config, served_beside_the_gateway(config)))
    try:
        yield task
    finally:
        if not task.done():
            signal.raise_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT):
            await asyncio.wait({task})


def url(config: Config, path: str, *, port: int | None = None) -> str:
    return f"http://{config.dashboard.host}:{port or config.dashboard.port}{path}"


async def scrape(client: httpx.AsyncClient, address: str) -> dict[str, float]:
    """``/metrics`` parsed by Prometheus's own parser: each sample by name and labels."""
    response = await client.get(address, headers={"Authorization": f"Bearer {TOKEN}"})
    response.raise_for_status()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


async def until_served(client: httpx.AsyncClient, address: str, task: asyncio.Task[int]) -> None:
    """Wait until the daemon answers at ``address`` (its dashboard starts after the gateway)."""
    async with asyncio.timeout(WAIT):
        while True:
            assert not task.done(), f"the daemon exited with {task.result()}"
            try:
                await client.get(address)
                return
            except httpx.ConnectError:
                await asyncio.sleep(0.05)


async def until_turns(client: httpx.AsyncClient, address: str, turns: int) -> dict[str, float]:
    """Scrape until the turn histogram counted ``turns`` (it is observed after delivery)."""
    async with asyncio.timeout(WAIT):
        while True:
            samples = await scrape(client, address)
            if samples.get("hermes_turn_seconds_count{platform=telegram}") == turns:
                return samples
            await asyncio.sleep(0.05)


async def test_the_daemon_serves_the_dashboard_and_its_own_metrics_beside_the_stores(
    daemon_config: Config, telegram: TelegramEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    config = daemon_config
    metrics_port = config.dashboard.metrics_port
    async with httpx.AsyncClient(timeout=WAIT) as client, daemon(config) as task:
        await until_served(client, url(config, "/"), task)
        assert (await client.get(url(config, "/"))).status_code == 401
        assert (await client.get(url(config, "/metrics", port=metrics_port))).status_code == 401
        login = await client.get(url(config, f"/login?token={TOKEN}"), follow_redirects=True)
        assert login.status_code == 200
        assert "<title>Overview" in login.text
        for turn in range(TURNS):
            if turn == TURNS - 1:  # the last reply's first sends fail transiently
                telegram.inject_fault("sendMessage", status=500, count=RETRIES, chat_id=ALICE)
            telegram.push_message(ALICE, f"note {turn}")
            await telegram.wait_for_sent(ALICE, turn + 1, timeout=WAIT)
        samples = await until_turns(client, url(config, "/metrics"), TURNS)
        alone = await until_turns(client, url(config, "/metrics", port=metrics_port), TURNS)
    assert task.result() == EXIT_OK
    assert samples["hermes_model_seconds_count{platform=telegram}"] == TURNS
    assert 0 < samples["hermes_model_seconds_sum{platform=telegram}"]
    assert (
        samples["hermes_model_seconds_sum{platform=telegram}"]
        <= samples["hermes_turn_seconds_sum{platform=telegram}"]
    )
    assert samples["hermes_delivery_retries_total{platform=telegram}"] == RETRIES
    assert samples["hermes_queue_depth{}"] == 0
    assert samples["hermes_live_sessions{}"] == 1
    assert samples["process_resident_memory_bytes{}"] > 0
    # Beside them, the store's totals.
    assert samples["hermes_messages_received_total{platform=telegram}"] == TURNS
    assert samples["hermes_messages_answered_total{platform=telegram}"] == TURNS
    assert alone["hermes_turn_seconds_count{platform=telegram}"] == TURNS
    assert "dashboard: http://127.0.0.1:" in caplog.text
    assert TOKEN not in caplog.text  # not even the login link's request
    async with httpx.AsyncClient() as client:  # stopped with the daemon
        with pytest.raises(httpx.ConnectError):
            await client.get(url(config, "/"))


async def test_a_port_in_use_fails_the_start(daemon_config: Config) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        config = with_dashboard(daemon_config, port=taken.getsockname()[1])
        async with asyncio.timeout(WAIT):
            code = await run_gateway(config, served_beside_the_gateway(config))
            assert code == EXIT_STARTUP_FAILED


def test_the_daemon_needs_the_token_to_serve_the_dashboard(
    daemon_config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV)
    with pytest.raises(ConfigError, match=TOKEN_ENV):
        dashboard_beside(daemon_config)


def test_binding_beyond_loopback_needs_an_explicit_setting() -> None:
    with pytest.raises(ConfigError, match="allow_remote"):
        parse_config({"dashboard": {"enabled": True, "host": "0.0.0.0"}})
    config = parse_config({"dashboard": {"host": "0.0.0.0", "allow_remote": True}})
    assert config.dashboard.host == "0.0.0.0"
    with pytest.raises(ConfigError, match="metrics_port"):
        parse_config({"dashboard": {"port": 9000, "metrics_port": 9000}})


async def operations_once(client: httpx.AsyncClient, config: Config, ready: str) -> str:
    """The operations page, once it shows ``ready`` (the MCP server connects on its own)."""
    async with asyncio.timeout(WAIT):
        while True:
            page = (await client.get(url(config, "/operations"))).text
            if ready in page:
                return page
            await asyncio.sleep(0.05)


async def test_operations_shows_the_daemons_platforms_and_mcp_servers(
    daemon_config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PID_ENV, str(tmp_path / "notes.pid"))
    config = with_dashboard(mcp_config(daemon_config), port=daemon_config.dashboard.port)
    async with httpx.AsyncClient(timeout=WAIT) as client, daemon(config) as task:
        await until_served(client, url(config, "/"), task)
        await client.get(url(config, f"/login?token={TOKEN}"))
        page = await operations_once(client, config, "<td>ready</td>")
    platform = re.search(r'<tr data-platform="telegram">(.*?)</tr>', page)
    assert platform is not None
    assert "<td>connected</td>" in platform.group(1)
    assert "as @" in platform.group(1)
    server = re.search(r'<tr data-server="notes">(.*?)</tr>', page)
    assert server is not None
    assert "<td>ready</td>" in server.group(1)
    assert re.search(r"<td>[1-9]\d* tool\(s\)</td>", server.group(1))


async def test_operations_served_alone_shows_no_platform_states(
    tmp_path: Path, anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(tmp_path, anthropic)
    store = await open_store(database_url(config))
    try:
        app = create_app(dashboard_context(config, Repository(store), DashboardAuth(TOKEN)))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://dash") as client:
            page = await client.get("/operations", headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        await store.close()
    assert page.status_code == 200
    assert 'id="platforms"' not in page.text
    assert 'id="mcp"' not in page.text


def test_a_disabled_dashboard_serves_nothing_beside_the_gateway(daemon_config: Config) -> None:
    disabled = daemon_config.model_copy(update={"dashboard": DashboardSettings()})
    assert served_beside_the_gateway(disabled) == []
