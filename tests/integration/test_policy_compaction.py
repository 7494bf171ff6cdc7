"""The context policy through the real session runtime, the Anthropic emulator and SQLite:
cold-start compaction fires when the cost model says it pays and not otherwise, never makes a
message wait for a slow summary, decides the same on a replay, and is off when switched off."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.app import App, open_app
from gateway.config import parse_config
from gateway.session import SessionAddress, SessionRuntime
from gateway.store.records import CompactionRecord
from sandbox.anthropic_api import AnthropicEmulator

KEY_ENV = "HERMES_TEST_POLICY_KEY"
SUMMARY_PHRASE = "structured summary"
ADDRESS = SessionAddress("telegram:7", "telegram", "7", "7")
START = 1_764_000_000.0
"""Platform time of the first message (November 2025)."""
MINUTE = 60.0
DAY = 86_400.0
WAIT = 60.0

Transcript = list[tuple[float, str]]


@pytest.fixture(autouse=True)
def _key(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")


@pytest.fixture
async def anthropic() -> AsyncIterator[AnthropicEmulator]:
    emulator = AnthropicEmulator(reply_tokens=300)
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()


AppFactory = Callable[..., Any]


@pytest.fixture
def policy_app(tmp_path: Path, anthropic: AnthropicEmulator) -> AppFactory:
    """``async with policy_app(name, **compression) as app``: an app on its own SQLite file."""

    @asynccontextmanager
    async def running(name: str = "run", **compression: Any) -> AsyncIterator[App]:
        config = parse_config(
            {
                "model": {
                    "base_url": anthropic.base_url,
                    "api_key_env": KEY_ENV,
                    "max_retries": 0,
                },
                "compression": compression,
                "database": {"url": f"sqlite+aiosqlite:///{tmp_path / name}.db"},
            }
        )
        async with open_app(config) as app:
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


def summary_requests(emulator: AnthropicEmulator) -> list[Any]:
    return [r for r in emulator.requests if SUMMARY_PHRASE in (r.last_user_text or "").lower()]


def chat_requests(emulator: AnthropicEmulator) -> list[Any]:
    return [r for r in emulator.requests if r not in summary_requests(emulator)]


async def test_a_message_days_later_compacts_a_large_cold_context_before_its_turn(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    first = visit(START, 40)
    async with policy_app() as app:
        await replay(app, first)
        before = chat_requests(anthropic)[-1].prompt_tokens
        runtime = await replay(app, visit(START + 2 * DAY, 1, first=40))
        records = await compactions(app)
    assert [c.trigger for c in records] == ["cold_start"]
    assert records[0].outcome == "summarized"
    after = chat_requests(anthropic)[-1].prompt_tokens
    assert after < before / 3, "the first turn of the new visit sends the compacted prompt"
    assert runtime.context[-1]["role"] == "assistant"
    assert "turn 40" in str(runtime.context[-2]["content"])
    (summary,) = summary_requests(anthropic)
    assert summary.model == "claude-haiku-4-5"


async def test_no_compaction_when_the_cache_is_warm_or_the_context_is_small(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    async with policy_app("warm") as app:
        # Forty turns a minute apart, then one five minutes later: the cache is still warm.
        await replay(app, [*visit(START, 40), (START + 44 * MINUTE, "and one more thing")])
        warm = await compactions(app)
    async with policy_app("small") as app:
        # A small context after days away: a summary would cost more than it saves.
        await replay(app, [*visit(START, 2), *visit(START + 3 * DAY, 1, first=2)])
        small = await compactions(app)
    assert warm == []
    assert small == []
    assert summary_requests(anthropic) == []


async def test_every_summary_after_the_first_updates_the_previous_one(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    transcript = [
        *visit(START, 30),
        *visit(START + 2 * DAY, 25, first=30),
        *visit(START + 5 * DAY, 25, first=55),
        *visit(START + 9 * DAY, 2, first=80),
    ]
    async with policy_app() as app:
        await replay(app, transcript)
        records = await compactions(app)
    assert [c.trigger for c in records] == ["cold_start"] * 3
    summaries = summary_requests(anthropic)
    assert len(summaries) == 3
    for previous, later in itertools.pairwise(summaries):
        assert previous.reply_text.strip()[:200] in later.last_user_text


async def test_the_same_transcript_replayed_twice_compacts_the_same_way(
    policy_app: AppFactory,
) -> None:
    transcript = [
        *visit(START, 30),
        *visit(START + 1 * DAY, 3, first=30),
        *visit(START + 4 * DAY, 20, first=33),
        *visit(START + 6 * DAY, 2, first=53),
    ]
    runs = []
    for name in ("first", "second"):
        async with policy_app(name) as app:
            await replay(app, transcript)
            runs.append(
                [
                    (c.trigger, c.outcome, c.first_message_id, c.last_message_id, c.tokens_after)
                    for c in await compactions(app)
                ]
            )
    assert runs[0] == runs[1]
    assert runs[0], "the transcript compacts at least once"


async def test_with_the_policy_off_a_replay_behaves_as_with_no_message_times(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    transcript = [*visit(START, 30), *visit(START + 2 * DAY, 3, first=30)]
    async with policy_app("off", cold_start="off", idle="off") as app:
        await replay(app, transcript)
        off = await compactions(app)
    with_times = [(r.n_messages, r.prompt_tokens) for r in anthropic.requests]
    anthropic.requests.clear()
    async with policy_app("untimed") as app:
        for _, text in transcript:
            await app.sessions.run_turn(ADDRESS, text)
        untimed = await compactions(app)
    assert off == untimed == []
    assert with_times == [(r.n_messages, r.prompt_tokens) for r in anthropic.requests]


async def test_a_slow_summary_never_holds_up_the_message_and_is_applied_after_its_turn(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    async with policy_app() as app:
        await replay(app, visit(START, 40))
        anthropic.inject_fault("slow", delay=10.0, contains=SUMMARY_PHRASE)
        runtime = await app.sessions.get(ADDRESS)
        reply = await runtime.run_turn("back again: what was fact #3?", sent_at=START + 2 * DAY)
        pending = runtime.compactions.pending
        # The turn was answered on the full context while the summary was still being written.
        assert reply.policy is None
        assert pending is not None and not pending.task.done()
        full = chat_requests(anthropic)[-1].prompt_tokens
        async with asyncio.timeout(WAIT):
            await runtime.compactions.settled()
        records = await compactions(app)
        await runtime.run_turn("and fact #4?", sent_at=START + 2 * DAY + MINUTE)
    assert [c.trigger for c in records] == ["cold_start"]
    assert chat_requests(anthropic)[-1].prompt_tokens < full / 3
    assert "what was fact #3" in str(runtime.context[-4]["content"])
