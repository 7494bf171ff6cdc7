"""The loaded-session cache is bounded in memory (``gateway.loaded_sessions_max_mb``): past the
bound the least recently used sessions are unloaded, and a session unloaded that way loses
nothing, its next message finds its whole context again in the store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from gateway.config.schema import parse_config
from gateway.runtime.app import App, open_app
from gateway.sessions.runtime import SessionAddress
from gateway.sessions.session_memory import (
    BYTES_PER_LOADED_MESSAGE,
    BYTES_PER_LOADED_TOKEN,
    BYTES_PER_MB,
    loaded_context_bytes,
)
from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.conftest import KEY_ENV

BOUND_MB = 0.015
"""About 15 KB: a session of two turns with the emulator's long replies takes about 10."""


def _address(user: int) -> SessionAddress:
    return SessionAddress(f"telegram:{user}", "telegram", str(user), str(user))


@asynccontextmanager
async def _app(tmp_path: Path, anthropic: AnthropicEmulator) -> AsyncIterator[App]:
    config = parse_config(
        {
            "model": {"base_url": anthropic.base_url, "api_key_env": KEY_ENV, "max_retries": 0},
            "database": {"url": f"sqlite+aiosqlite:///{tmp_path / 'cache.db'}"},
            "gateway": {"loaded_sessions_max_mb": BOUND_MB},
        }
    )
    async with open_app(config) as app:
        yield app


async def test_sessions_beyond_the_memory_bound_are_unloaded_least_recent_first(
    tmp_path: Path, anthropic: AnthropicEmulator
) -> None:
    async with _app(tmp_path, anthropic) as app:
        for user in (1, 2, 3):
            for turn in range(2):
                await app.sessions.run_turn(_address(user), f"user {user} turn {turn} about tea")
        await app.sessions.get(_address(3))  # takes the size the last turn left

        assert app.sessions.max_loaded_bytes == int(BOUND_MB * BYTES_PER_MB)
        assert app.sessions.loaded_count < 3
        assert app.sessions.loaded_bytes <= app.sessions.max_loaded_bytes
        newest = await app.sessions.get(_address(3))
        assert app.sessions.loaded_bytes >= loaded_context_bytes(newest.context)


async def test_a_session_unloaded_for_memory_keeps_its_whole_context(
    tmp_path: Path, anthropic: AnthropicEmulator
) -> None:
    async with _app(tmp_path, anthropic) as app:
        first = await app.sessions.get(_address(1))
        await app.sessions.run_turn(_address(1), "remember the blue teapot")
        kept = [(m["role"], m.get("content")) for m in first.context]
        for user in (2, 3):
            for turn in range(2):
                await app.sessions.run_turn(_address(user), f"user {user} turn {turn}")

        reloaded = await app.sessions.get(_address(1))

    assert reloaded is not first
    assert [(m["role"], m.get("content")) for m in reloaded.context] == kept


def test_a_loaded_message_costs_its_fixed_part_plus_its_tokens() -> None:
    short = {"role": "user", "content": "hi", "_tokens": 3}
    long = {"role": "user", "content": "word " * 400, "_tokens": 401}

    assert loaded_context_bytes([short]) == BYTES_PER_LOADED_MESSAGE + 3 * BYTES_PER_LOADED_TOKEN
    assert loaded_context_bytes([short, long]) > loaded_context_bytes([short]) + 4000
