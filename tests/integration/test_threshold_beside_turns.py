"""A compaction the window asks for (the agent's threshold, hygiene) never holds up a turn whose
prompt still fits: it runs beside the turns and is applied after, once its summary is ready."""

from __future__ import annotations

import asyncio

from gateway.sessions.runtime import SessionRuntime
from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.policy_support import (
    ADDRESS,
    START,
    SUMMARY_PHRASE,
    WAIT,
    AppFactory,
    chat_requests,
    compactions,
    summary_requests,
    visit,
)

WINDOW = 32_000
MAX_TURNS = 150
"""Far more than it takes to reach half of the window; a guard, not an expectation."""


async def _turns_until_a_compaction_starts(app, transcript) -> SessionRuntime:
    for sent_at, text in transcript:
        await app.sessions.run_turn(ADDRESS, text, sent_at=sent_at)
        runtime = await app.sessions.get(ADDRESS)
        if runtime.agent.compactions.pending is not None:
            return runtime
    raise AssertionError("the threshold was never reached")


async def test_a_slow_summary_at_the_threshold_is_applied_after_the_turn_it_did_not_hold_up(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    anthropic.inject_fault("slow", delay=10.0, contains=SUMMARY_PHRASE)
    transcript = visit(START, MAX_TURNS)
    async with policy_app(context_length=WINDOW, cold_start="off", idle="off") as app:
        runtime = await _turns_until_a_compaction_starts(app, transcript)
        pending = runtime.agent.compactions.pending
        assert pending is not None and pending.trigger == "agent"
        # The turn that reached the threshold was answered while the summary was being written.
        assert not pending.task.done()
        assert await compactions(app) == []
        answered_on = chat_requests(anthropic)[-1].prompt_tokens
        assert answered_on < WINDOW
        async with asyncio.timeout(WAIT):
            await runtime.agent.compactions.settled()
        [record] = await compactions(app)
        turn = len(chat_requests(anthropic))
        sent_at, text = transcript[turn]
        await app.sessions.run_turn(ADDRESS, text, sent_at=sent_at)
    assert record.trigger == "agent"
    assert len(summary_requests(anthropic)) == 1
    assert chat_requests(anthropic)[-1].prompt_tokens < answered_on * 2 / 3
    # Nothing of the conversation since the snapshot was lost: the newest turns are in context.
    assert text in str(runtime.context[-2]["content"])


async def test_without_the_policy_the_threshold_compaction_still_keeps_every_request_in_the_window(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    async with policy_app(context_length=WINDOW, cold_start="off", idle="off") as app:
        for sent_at, text in visit(START, 90):
            await app.sessions.run_turn(ADDRESS, text, sent_at=sent_at)
        runtime = await app.sessions.get(ADDRESS)
        async with asyncio.timeout(WAIT):
            await runtime.agent.compactions.settled()
        records = await compactions(app)
    assert records and {r.trigger for r in records} == {"agent"}
    assert max(r.prompt_tokens for r in chat_requests(anthropic)) < WINDOW
    assert all(r.fault is None for r in anthropic.requests)


async def test_switched_off_the_threshold_compaction_runs_before_the_turn_it_holds_up(
    policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    async with policy_app(
        context_length=WINDOW, cold_start="off", idle="off", threshold_in_background="off"
    ) as app:
        for sent_at, text in visit(START, MAX_TURNS):
            reply = await app.sessions.run_turn(ADDRESS, text, sent_at=sent_at)
            runtime = await app.sessions.get(ADDRESS)
            assert runtime.agent.compactions.pending is None
            if reply.result is not None and reply.result.compactions:
                break
        records = await compactions(app)
    assert [r.trigger for r in records] == ["agent"]
    # The summary came before the turn's own request, which went out on the compacted context.
    assert anthropic.requests[-2] in summary_requests(anthropic)
