"""Idle compaction through the real session runtime, the Anthropic emulator and SQLite: a
session left alone past its cache TTL is compacted in the background (the timer on the session
clock, whose elapsed time the test steps), a message meanwhile never waits for a slow summary,
a compaction that is no longer valid is dropped, and a replay that never lets the timer fire
compacts exactly as the live run did."""

from __future__ import annotations

import asyncio

from agent.engines.toolkit.boundaries import is_summary_message
from agent.policy.scheduler import CompactionScheduler
from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.policy_support import (
    ADDRESS,
    DAY,
    MINUTE,
    START,
    SUMMARY_PHRASE,
    TTL,
    WAIT,
    AppFactory,
    SteppedTime,
    chat_requests,
    compaction_shapes,
    compactions,
    replay,
    summary_requests,
    visit,
)

PAST_THE_IDLE_POINT = TTL + 120.0
"""Elapsed seconds after the last message by which the idle timer has surely fired."""
FIRST_VISIT = visit(START, 40)
LAST_SENT = FIRST_VISIT[-1][0]
BACK = (START + 2 * DAY, "back again: what was fact #3?")


async def idle_started(scheduler: CompactionScheduler) -> None:
    """Wait until the idle timer has started its compaction."""
    async with asyncio.timeout(WAIT):
        while "idle" not in scheduler.log.started:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_a_session_left_alone_is_compacted_in_the_background_as_a_replay_would_be(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    elapsed = SteppedTime()
    async with policy_app("live", elapsed=elapsed) as app:
        runtime = await replay(app, FIRST_VISIT)
        full = chat_requests(anthropic)[-1].prompt_tokens
        chats = len(chat_requests(anthropic))
        point = runtime.agent.compactions.idle_point
        assert point is not None and point.at > LAST_SENT + TTL
        assert await compactions(app) == []
        await elapsed.advance(PAST_THE_IDLE_POINT)
        await idle_started(runtime.agent.compactions)
        async with asyncio.timeout(WAIT):
            await runtime.agent.compactions.settled()
        # Applied while nobody was talking: no chat request, the context now has a summary.
        assert [c.trigger for c in await compactions(app)] == ["idle"]
        assert len(chat_requests(anthropic)) == chats
        assert any(is_summary_message(m) for m in runtime.context)
        reply = await runtime.agent.run_turn(BACK[1], sent_at=BACK[0])
        live = compaction_shapes(await compactions(app))
    assert reply.policy is None, "the message found the context compacted already"
    assert len(live) == 1 and len(summary_requests(anthropic)) == 1
    assert chat_requests(anthropic)[-1].prompt_tokens < full / 3
    async with policy_app("replay") as app:
        # Replayed faster than real time: the timer never fires, the message makes the call.
        await replay(app, [*FIRST_VISIT, BACK])
        replayed = compaction_shapes(await compactions(app))
    assert replayed == live


async def test_a_message_during_a_slow_idle_summary_does_not_wait_for_it(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    elapsed = SteppedTime()
    async with policy_app(elapsed=elapsed) as app:
        runtime = await replay(app, FIRST_VISIT)
        anthropic.inject_fault("slow", delay=10.0, contains=SUMMARY_PHRASE)
        await elapsed.advance(PAST_THE_IDLE_POINT)
        await idle_started(runtime.agent.compactions)
        reply = await runtime.agent.run_turn(BACK[1], sent_at=BACK[0])
        pending = runtime.agent.compactions.pending
        # Answered on the full context while the summary was still being written.
        assert reply.policy is None and reply.text
        assert pending is not None and pending.call.trigger == "idle"
        assert not pending.task.done()
        full = chat_requests(anthropic)[-1].prompt_tokens
        async with asyncio.timeout(WAIT):
            await runtime.agent.compactions.settled()
        records = await compactions(app)
        await runtime.agent.run_turn("and fact #4?", sent_at=BACK[0] + MINUTE)
    assert [c.trigger for c in records] == ["idle"]
    assert chat_requests(anthropic)[-1].prompt_tokens < full / 3
    assert "what was fact #3" in str(runtime.context[-4]["content"])


async def test_an_idle_compaction_is_dropped_when_the_context_changed_meanwhile(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    elapsed = SteppedTime()
    # A small verbatim tail, so /compress has something to summarise in a 200K window.
    async with policy_app(elapsed=elapsed, target_ratio=0.02) as app:
        runtime = await replay(app, FIRST_VISIT)
        anthropic.inject_fault("slow", delay=3.0, contains=SUMMARY_PHRASE)
        await elapsed.advance(PAST_THE_IDLE_POINT)
        await idle_started(runtime.agent.compactions)
        # /compress billing while the idle summary is being written
        manual = await runtime.agent.compress("billing")
        async with asyncio.timeout(WAIT):
            await runtime.agent.compactions.settled()
        records = await compactions(app)
        context = list(runtime.context)
    assert manual.outcome == "summarized", manual.detail
    assert [c.trigger for c in records] == ["manual"]
    assert runtime.agent.compactions.log.dropped == ["the context changed meanwhile"]
    assert len(summary_requests(anthropic)) == 2
    assert sum(is_summary_message(m) for m in context) == 1


async def test_a_message_sent_before_the_idle_point_drops_an_idle_compaction_started_early(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    elapsed = SteppedTime()
    async with policy_app(elapsed=elapsed) as app:
        runtime = await replay(app, FIRST_VISIT)
        anthropic.inject_fault("slow", delay=3.0, contains=SUMMARY_PHRASE)
        await elapsed.advance(PAST_THE_IDLE_POINT)
        await idle_started(runtime.agent.compactions)
        # Sent four minutes after the last one (inside the TTL) but delivered late.
        late = await runtime.agent.run_turn("one more thing", sent_at=LAST_SENT + 4 * MINUTE)
        async with asyncio.timeout(WAIT):
            await runtime.agent.compactions.settled()
        records = await compactions(app)
    assert late.text and late.policy is None
    assert records == []
    assert runtime.agent.compactions.log.dropped == ["a message from before the idle point"]
    assert not any(is_summary_message(m) for m in runtime.context)


async def test_with_idle_off_no_timer_runs_and_the_next_message_compacts_at_cold_start(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    elapsed = SteppedTime()
    async with policy_app(elapsed=elapsed, idle="off") as app:
        runtime = await replay(app, FIRST_VISIT)
        assert runtime.agent.compactions.idle_point is None
        await elapsed.advance(PAST_THE_IDLE_POINT)
        assert summary_requests(anthropic) == []
        await app.sessions.run_turn(ADDRESS, BACK[1], sent_at=BACK[0])
        records = await compactions(app)
    assert [c.trigger for c in records] == ["cold_start"]
