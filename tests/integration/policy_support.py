"""Shared by the context-policy tests: an app on the Anthropic emulator and its own SQLite file,
multi-day transcripts with platform times, and a time source the test steps by hand."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from agent.policy.session_clock import ElapsedTime
from gateway.config.schema import parse_config
from gateway.runtime.app import App, open_app
from gateway.sessions.runtime import SessionAddress, SessionRuntime
from gateway.store.records import CompactionRecord
from sandbox.anthropic_api import AnthropicEmulator

KEY_ENV = "HERMES_TEST_ANTHROPIC_KEY"
"""Set for every end-to-end test by the conftest."""
SUMMARY_PHRASE = "structured summary"
ADDRESS = SessionAddress("telegram:7", "telegram", "7", "7")
START = 1_764_000_000.0
"""Platform time of the first message (November 2025)."""
MINUTE = 60.0
DAY = 86_400.0
TTL = 300.0
WAIT = 60.0
"""Guard against a hang, never a timing assertion."""

Transcript = list[tuple[float, str]]
AppFactory = Callable[..., AbstractAsyncContextManager[App]]


class SteppedTime:
    """Elapsed time that moves only when the test says so (``advance``); a sleeper wakes once
    it has moved past the sleeper's deadline. Stands in for the process's monotonic clock."""

    def __init__(self) -> None:
        self._now = 0.0
        self._moved = asyncio.Condition()

    def monotonic(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        deadline = self._now + seconds
        async with self._moved:
            await self._moved.wait_for(lambda: self._now >= deadline)

    async def advance(self, seconds: float) -> None:
        self._now += seconds
        async with self._moved:
            self._moved.notify_all()


def app_factory(anthropic: AnthropicEmulator, tmp_path: Path) -> AppFactory:
    """``async with factory(name, elapsed=None, context_length=None, **compression) as app``: an
    app on the emulator with its own SQLite file; ``elapsed`` (a :class:`SteppedTime`) measures
    its sessions' time; ``context_length`` overrides the model's window."""

    @asynccontextmanager
    async def running(
        name: str = "run",
        *,
        elapsed: SteppedTime | None = None,
        context_length: int | None = None,
        **compression: Any,
    ) -> AsyncIterator[App]:
        model: dict[str, Any] = {
            "base_url": anthropic.base_url,
            "api_key_env": KEY_ENV,
            "max_retries": 0,
        }
        if context_length is not None:
            model["context_length"] = context_length
        config = parse_config(
            {
                "model": model,
                "compression": compression,
                "database": {"url": f"sqlite+aiosqlite:///{tmp_path / name}.db"},
            }
        )
        async with open_app(config) as app:
            if elapsed is not None:
                app.services.elapsed = ElapsedTime(elapsed.monotonic, elapsed.sleep)
            yield app

    return running


def visit(start: float, turns: int, first: int = 0) -> Transcript:
    """``turns`` messages a minute apart, each with facts worth keeping."""
    filler = "We went through the plan for the billing migration step by step again. " * 14
    return [
        (
            start + i * MINUTE,
            f"turn {first + i}: remember fact #{first + i} is {i * 7919}. {filler}",
        )
        for i in range(turns)
    ]


async def replay(app: App, transcript: Transcript) -> SessionRuntime:
    for sent_at, text in transcript:
        await app.sessions.run_turn(ADDRESS, text, sent_at=sent_at)
    return await app.sessions.get(ADDRESS)


async def compactions(app: App) -> list[CompactionRecord]:
    runtime = await app.sessions.get(ADDRESS)
    return await app.repo.list_compactions(runtime.session_id)


def compaction_shapes(records: list[CompactionRecord]) -> list[tuple[Any, ...]]:
    """What must match between two runs of a transcript: count, triggers and ranges."""
    return [(c.trigger, c.outcome, c.first_message_id, c.last_message_id) for c in records]


def summary_requests(emulator: AnthropicEmulator) -> list[Any]:
    return [r for r in emulator.requests if SUMMARY_PHRASE in (r.last_user_text or "").lower()]


def chat_requests(emulator: AnthropicEmulator) -> list[Any]:
    return [r for r in emulator.requests if r not in summary_requests(emulator)]
