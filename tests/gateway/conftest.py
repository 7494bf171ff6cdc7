"""Fixtures for the gateway tests: the emulators, a config pointing at them, a running Gateway.

Everything of ours is real (store on a SQLite file, sessions, agent loop, adapters, the real
python-telegram-bot and discord.py clients); only the network edges are the sandbox emulators.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.config.schema import Config, parse_config
from gateway.platforms.telegram.adapter import TelegramAdapter
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.store.db import default_database_url
from gateway.store.records import UNFINISHED_INBOUND_STATUSES, InboundRecord
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.telegram_api import TelegramEmulator

MODEL_KEY_ENV = "HERMES_TEST_MODEL_KEY"
TELEGRAM_TOKEN_ENV = "HERMES_TEST_TELEGRAM_TOKEN"
DISCORD_TOKEN_ENV = "HERMES_TEST_DISCORD_TOKEN"
WEBHOOK_RETRY_SECONDS = 0.1
ALICE = 42
"""The Telegram user (and private chat) on the allowlist."""

GatewayFactory = Callable[..., AbstractAsyncContextManager[Gateway]]


@pytest.fixture(scope="session", autouse=True)
def _model_sdk_imported() -> None:
    """The model SDK imported once per test process, as the daemon imports it while the
    platforms connect (``provider.warm_up`` in :mod:`gateway.runtime.daemon`): the in-process
    gateways here do not, and a cold import (~2 s on a slow host) would slow whichever test
    runs first in a worker past the timings it sets (a typing delay of 1 s)."""
    importlib.import_module("agent.providers.anthropic.sdk")


@pytest.fixture(autouse=True)
def _isolated_env(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_KEY_ENV, "test-key")


@pytest.fixture
async def anthropic() -> AsyncIterator[AnthropicEmulator]:
    """The model: deterministic replies, instant."""
    emulator = AnthropicEmulator()
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()


@pytest.fixture
async def telegram(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TelegramEmulator]:
    """A local Telegram Bot API server; its token is in the environment for the gateway.

    A refused webhook POST is retried after a tenth of a second (Telegram waits longer)."""
    emulator = TelegramEmulator(webhook_retry_seconds=WEBHOOK_RETRY_SECONDS)
    await emulator.start()
    monkeypatch.setenv(TELEGRAM_TOKEN_ENV, emulator.token)
    try:
        yield emulator
    finally:
        await emulator.stop()


def gateway_config(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    *,
    telegram: TelegramEmulator | None = None,
    discord: DiscordEmulator | None = None,
    telegram_settings: dict[str, Any] | None = None,
    discord_settings: dict[str, Any] | None = None,
    gateway_settings: dict[str, Any] | None = None,
    media_settings: dict[str, Any] | None = None,
    model_settings: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
) -> Config:
    """A config whose model, database and platforms all point at the test's emulators;
    ``sections`` adds top-level sections (``{"memory": {...}}``)."""
    platforms: dict[str, Any] = {}
    if telegram is not None:
        platforms["telegram"] = {
            "enabled": True,
            "token_env": TELEGRAM_TOKEN_ENV,
            "base_url": telegram.base_url,
            "base_file_url": telegram.base_file_url,
            "allowed_users": [ALICE, "bob"],
            "poll_timeout": 1,
            # Instant emulated replies still show typing, so tests can observe it.
            "typing_delay": 0,
            **(telegram_settings or {}),
        }
    if discord is not None:
        platforms["discord"] = {
            "enabled": True,
            "token_env": DISCORD_TOKEN_ENV,
            "api_base_url": discord.api_base_url,
            "gateway_url": discord.gateway_url,
            "allow_all": True,
            "typing_delay": 0,
            **(discord_settings or {}),
        }
    return parse_config(
        {
            "model": {
                "base_url": anthropic.base_url,
                "api_key_env": MODEL_KEY_ENV,
                "max_retries": 0,
                **(model_settings or {}),
            },
            "database": {"url": default_database_url(tmp_path / "home")},
            "platforms": platforms,
            "gateway": gateway_settings or {},
            "media": media_settings or {},
            **(sections or {}),
        }
    )


@pytest.fixture
def run_gateway(tmp_path: Path, anthropic: AnthropicEmulator) -> GatewayFactory:
    """``async with run_gateway(telegram=emu, ...) as gateway``: a started in-process Gateway."""

    @asynccontextmanager
    async def running(**options: Any) -> AsyncIterator[Gateway]:
        hold_seconds = options.pop("hold_seconds", 0.3)
        config = gateway_config(tmp_path, anthropic, **options)
        async with open_app(config) as app:
            gateway = Gateway(app, hold_seconds=hold_seconds)
            await gateway.start()
            try:
                yield gateway
            finally:
                await gateway.stop(grace_seconds=2.0)

    return running


def telegram_adapter(gateway: Gateway) -> TelegramAdapter:
    """The running gateway's Telegram adapter."""
    adapter = gateway.adapters["telegram"]
    assert isinstance(adapter, TelegramAdapter)
    return adapter


def message_key(update: dict[str, Any]) -> str:
    """The inbound table's id of a pushed Telegram update's message (``chat:message``)."""
    return f"{update['message']['chat']['id']}:{update['message']['message_id']}"


async def all_quiet(gateway: Gateway, telegram: TelegramEmulator | None = None) -> None:
    """Wait until nothing more happens unless someone writes again: Telegram (when given) has
    handed every update over, and the gateway has finished with all it received.

    Discord has no acknowledgement to watch: a test waits for the answer to the last event it
    pushed, by which time every earlier event of the websocket is with the gateway, then here.
    """
    if telegram is not None:
        await telegram.wait_until_all_taken()
    await gateway.wait_idle()


async def settled_inbound(
    gateway: Gateway,
    platform: str,
    platform_message_id: str,
    timeout: float = 10.0,  # noqa: ASYNC109 - a guard against hangs
) -> InboundRecord:
    """The inbound record once its handling has finished (done, refused or failed)."""
    async with asyncio.timeout(timeout):
        while True:
            record = await gateway.app.repo.get_inbound(platform, platform_message_id)
            if record is not None and record.status not in UNFINISHED_INBOUND_STATUSES:
                return record
            await asyncio.sleep(0.02)


GUILD_ID = 700000000000000001
GENERAL_ID = 700000000000000010
THREAD_ID = 700000000000000020


@pytest.fixture
async def discord_emulator(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[DiscordEmulator]:
    """A local Discord with one guild (#general and a thread); the token is in the env.

    The adapter points discord.py's class-level URLs at it; monkeypatch restores them.
    """
    import discord

    emulator = DiscordEmulator()
    emulator.add_guild(GUILD_ID, "hermes-lab", [(GENERAL_ID, "general")])
    emulator.add_thread(GUILD_ID, GENERAL_ID, THREAD_ID, "design-notes")
    await emulator.start()
    monkeypatch.setenv(DISCORD_TOKEN_ENV, emulator.token)
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    gateway_class = discord.gateway.DiscordWebSocket
    monkeypatch.setattr(gateway_class, "DEFAULT_GATEWAY", gateway_class.DEFAULT_GATEWAY)
    try:
        yield emulator
    finally:
        await emulator.stop()


def memo_config(
    tmp_path: Path, anthropic: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> Config:
    """A gateway configuration with the memo test platform enabled for ``ann`` (its token in
    the environment); the platform must be registered by the test."""
    monkeypatch.setenv("MEMO_TOKEN", "memo-secret")
    config = gateway_config(tmp_path, anthropic)
    config.platforms.memo.enabled = True
    config.platforms.memo.allowed_users = ["ann"]
    return config
