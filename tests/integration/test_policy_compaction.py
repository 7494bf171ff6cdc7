"""The context policy through the real session runtime, the Anthropic emulator and SQLite:
cold-start compaction fires when the cost model says it pays and not otherwise, never makes a
message wait for a slow summary, decides the same on a replay, and is off when switched off."""

from __future__ import annotations

import asyncio
import itertools

from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.policy_support import (
    ADDRESS,
    DAY,
    MINUTE,
    START,
    SUMMARY_PHRASE,
    WAIT,
    AppFactory,
    chat_requests,
    compaction_shapes,
    compactions,
    replay,
    summary_requests,
    visit,
)


async def test_a_message_days_later_compacts_a_large_cold_context_before_its_turn(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    first = visit(START, 40)
    async with policy_app(idle="off") as app:
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
    async with policy_app(idle="off") as app:
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
            records = await compactions(app)
            sizes = [c.tokens_after for c in records]
            runs.append([*compaction_shapes(records), *sizes])
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
    async with policy_app(idle="off") as app:
        await replay(app, visit(START, 40))
        anthropic.inject_fault("slow", delay=10.0, contains=SUMMARY_PHRASE)
        runtime = await app.sessions.get(ADDRESS)
        reply = await runtime.agent.run_turn(
            "back again: what was fact #3?", sent_at=START + 2 * DAY
        )
        pending = runtime.agent.compactions.pending
        # The turn was answered on the full context while the summary was still being written.
        assert reply.policy is None
        assert pending is not None and not pending.task.done()
        full = chat_requests(anthropic)[-1].prompt_tokens
        async with asyncio.timeout(WAIT):
            await runtime.agent.compactions.settled()
        records = await compactions(app)
        await runtime.agent.run_turn("and fact #4?", sent_at=START + 2 * DAY + MINUTE)
    assert [c.trigger for c in records] == ["cold_start"]
    assert chat_requests(anthropic)[-1].prompt_tokens < full / 3
    assert "what was fact #3" in str(runtime.context[-4]["content"])
