"""``prompt_caching.cache_ttl: auto`` through the real session runtime, SQLite and the Anthropic
emulator's cache accounting (its clock follows the messages' platform times): a session that
answers every 20 minutes moves to the 1-hour tier and reads its cache across the gaps; one whose
gaps are seconds or days sends exactly what a fixed 5-minute tier sends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent.model_table import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
)
from gateway.commands import Command, run_local
from gateway.config.schema import parse_config
from gateway.runtime.app import App, open_app
from gateway.sessions.runtime import SessionAddress
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.anthropic_records import RequestRecord

KEY_ENV = "HERMES_TEST_TTL_KEY"
ADDRESS = SessionAddress("telegram:9", "telegram", "9", "9")
START = 1_764_000_000.0
MAIN = "claude-sonnet-4-5"
MINUTE = 60.0
DAY = 86_400.0
FILLER = "We compared the two quotes for the roof repair line by line once more. " * 12

Transcript = list[tuple[float, str]]


@pytest.fixture(autouse=True)
def _key(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")


@asynccontextmanager
async def daemon(tmp_path: Path, name: str, cache_ttl: str) -> AsyncIterator[tuple[App, Any]]:
    """A fresh emulator (its own cache and clock) and an app on its own SQLite file."""
    emulator = AnthropicEmulator(reply_tokens=200)
    await emulator.start()
    config = parse_config(
        {
            "model": {"base_url": emulator.base_url, "api_key_env": KEY_ENV, "max_retries": 0},
            "prompt_caching": {"cache_ttl": cache_ttl},
            "database": {"url": f"sqlite+aiosqlite:///{tmp_path / name}.db"},
        }
    )
    try:
        async with open_app(config) as app:
            yield app, emulator
    finally:
        await emulator.stop()


async def replay(app: App, emulator: AnthropicEmulator, transcript: Transcript) -> None:
    for sent_at, text in transcript:
        emulator.clock.advance_to(sent_at)
        await app.sessions.run_turn(ADDRESS, text, sent_at=sent_at)


def tiers(record: RequestRecord) -> set[str]:
    return {b.ttl for b in record.breakpoints}


def prompt_units(records: list[RequestRecord]) -> float:
    """The prompt cost of the requests in units of the input price (the emulator's counts)."""
    total = 0.0
    for record in records:
        usage = record.usage
        written_1h = int(usage["cache_creation"]["ephemeral_1h_input_tokens"])
        written_5m = int(usage["cache_creation_input_tokens"]) - written_1h
        total += (
            usage["input_tokens"]
            + written_5m * CACHE_WRITE_5M_MULTIPLIER
            + written_1h * CACHE_WRITE_1H_MULTIPLIER
            + usage["cache_read_input_tokens"] * CACHE_READ_MULTIPLIER
        )
    return total


def every_twenty_minutes(turns: int) -> Transcript:
    return [(START + i * 20 * MINUTE, f"note {i}: {FILLER}") for i in range(turns)]


def chat(records: list[RequestRecord]) -> list[RequestRecord]:
    """The turns' requests (summary requests go to another model and carry no breakpoints)."""
    return [r for r in records if r.model == MAIN]


def units_per_prompt_token(records: list[RequestRecord]) -> float:
    return prompt_units(records) / sum(r.prompt_tokens or 0 for r in records)


async def test_a_session_answering_every_twenty_minutes_moves_to_the_hour_tier_and_reads(
    tmp_path: Path,
) -> None:
    transcript = every_twenty_minutes(18)
    async with daemon(tmp_path, "auto", "auto") as (app, emulator):
        await replay(app, emulator, transcript)
        auto = list(emulator.requests)
        status = await run_local(app.sessions, ADDRESS, Command("status", ""))
        assert "auto TTL: 1h now" in status
    async with daemon(tmp_path, "fixed", "5m") as (app, emulator):
        await replay(app, emulator, transcript)
        fixed = list(emulator.requests)

    assert len(chat(auto)) == len(chat(fixed)) == 18
    # One tier per request: 5m until 12 gaps are seen, 1h from the 13th gap on.
    assert [tiers(r) for r in chat(auto)] == [{"5m"}] * 12 + [{"1h"}] * 6
    # A 20-minute gap is cold on 5m (the policy may compact then), warm on 1h (it never does).
    turns_before_summaries = [
        sum(1 for r in auto[:index] if r.model == MAIN)
        for index, r in enumerate(auto)
        if r.model != MAIN
    ]
    assert all(turns <= 12 for turns in turns_before_summaries)
    # On 1h the previous turn's prefix is still cached 20 minutes later; on 5m it never is.
    assert all(r.usage["cache_read_input_tokens"] > 1_000 for r in chat(auto)[13:])
    assert all(r.usage["cache_read_input_tokens"] == 0 for r in chat(fixed)[1:])
    assert units_per_prompt_token(chat(auto)[13:]) < 0.5
    assert units_per_prompt_token(chat(fixed)[13:]) > 1.0


async def test_gaps_of_seconds_or_days_send_exactly_what_the_five_minute_tier_sends(
    tmp_path: Path,
) -> None:
    transcript = [
        (START + day * DAY + i * 45.0, f"day {day} message {i}: {FILLER}")
        for day in (0, 2, 5)
        for i in range(6)
    ]
    runs = []
    for name in ("5m", "auto"):
        async with daemon(tmp_path, name, name) as (app, emulator):
            await replay(app, emulator, transcript)
            runs.append([(r.model, r.n_messages, tiers(r), r.usage) for r in emulator.requests])
    assert runs[0] == runs[1]
    assert all(t == {"5m"} for model, _, t, _ in runs[1] if model == MAIN)
