"""Clearing used tool outputs inside a tool loop: how long the session's turns run, when a
clearing pays now, which outputs stay whole, and where the cache breakpoints go so a clearing
rewrites only what it changed. Pure functions and small objects; the daemon path is in
tests/gateway/test_agent_work.py."""

from __future__ import annotations

import json

from agent.engines.toolkit.boundaries import SUMMARY_PREFIX
from agent.engines.toolkit.tool_output_pruning import (
    PRUNED_OUTPUT_PREFIX,
    first_clearable_in_turn,
    used_outputs_end,
)
from agent.model_table import lookup_model
from agent.policy.context_policy import should_clear_in_turn
from agent.policy.cost_model import Prices
from agent.policy.turn_steps import TurnSteps, expected_remaining_requests
from agent.prompt_caching import cache_breakpoints
from agent.types import Message

SONNET = Prices.of(lookup_model("claude-sonnet-4-5"))
LONG = "x" * 2_000


def step(n: int, output: str = LONG) -> list[Message]:
    """One step of a tool loop: the model's call and its result."""
    call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": f"step {n}", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": output},
    ]


def turn(request: str, steps: int, *, answered: bool = True) -> list[Message]:
    """A user message worked on for ``steps`` steps, with its final answer if ``answered``."""
    messages: list[Message] = [{"role": "user", "content": request}]
    for n in range(steps):
        messages += step(n)
    if answered:
        messages.append({"role": "assistant", "content": "done"})
    return messages


SYSTEM: Message = {"role": "system", "content": "You are a careful agent."}


def test_the_requests_left_come_from_the_turns_that_ran_longer() -> None:
    # Past turns of 30 and 40 requests; after 10 requests, 20 and 30 are left (mean 25),
    # shrunk towards the prior (10 more) with the weight of one turn: (20 + 30 + 10) / 3.
    assert expected_remaining_requests([30, 40, 5], 10) == 20.0
    # With no history, or past the longest turn, a turn that ran n requests runs n more.
    assert expected_remaining_requests([], 12) == 12.0
    assert expected_remaining_requests([8, 9], 12) == 12.0
    assert expected_remaining_requests([], 0) == 1.0


def test_turn_steps_counts_each_turns_requests_once_incrementally() -> None:
    context = [SYSTEM, *turn("first", 3), *turn("second", 5), *turn("third", 2, answered=False)]
    steps = TurnSteps()
    steps.observe(context)
    assert list(steps.finished) == [4, 6] and steps.current == 2
    context += step(9)
    steps.observe(context)
    assert list(steps.finished) == [4, 6] and steps.current == 3


def test_turn_steps_after_a_compaction_counts_no_turn_twice() -> None:
    context = [SYSTEM, *turn("first", 3), *turn("second", 2, answered=False)]
    steps = TurnSteps()
    steps.observe(context)
    in_progress = next(m for m in reversed(context) if m["role"] == "user")
    summary: Message = {"role": "user", "content": f"{SUMMARY_PREFIX}earlier work"}
    compacted = [dict(SYSTEM), summary, in_progress, *step(7), *step(8)]
    steps.observe(compacted)
    assert list(steps.finished) == [4]
    assert steps.current == 2  # the turn goes on: its requests counted from its message again
    compacted += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    steps.observe(compacted)
    assert list(steps.finished) == [4, 3] and steps.current == 0
    # A compaction whose newest user message is a new turn: the one before it finished.
    again = [dict(SYSTEM), {"role": "user", "content": f"{SUMMARY_PREFIX}all of it"}]
    again.append({"role": "user", "content": "new work"})
    steps.observe(again)
    assert list(steps.finished) == [4, 3] and steps.current == 0


def test_a_clearing_pays_when_the_saving_beats_the_rewrite_and_the_reads_already_paid() -> None:
    decision = should_clear_in_turn(8_000, 2_000, 30_000, main=SONNET, remaining_requests=20.0)
    assert decision.pays
    # 8,000 tokens x $0.30/M x 20 requests = $0.048 against 2,000 x ($3.75 - $0.30)/M.
    assert round(decision.saving_usd, 4) == 0.048
    assert round(decision.cost_usd, 4) == 0.0069


def test_a_clearing_waits_while_the_reads_paid_since_the_last_one_are_below_its_cost() -> None:
    # It would pay over the requests left, but clearing at every step would write the kept
    # outputs again each time: it waits until the wasted reads match the rewrite.
    early = should_clear_in_turn(3_000, 2_000, 6_000, main=SONNET, remaining_requests=30.0)
    assert not early.pays and early.saving_usd > 1.25 * early.cost_usd
    later = should_clear_in_turn(9_000, 2_200, 30_000, main=SONNET, remaining_requests=28.0)
    assert later.pays


def test_a_clearing_does_not_pay_near_the_end_of_a_turn() -> None:
    decision = should_clear_in_turn(4_000, 3_000, 100_000, main=SONNET, remaining_requests=2.0)
    assert not decision.pays
    assert decision.saving_usd < decision.cost_usd
    assert "does not pay" in decision.reason


def test_the_newest_results_and_the_unseen_ones_stay_whole() -> None:
    messages = [SYSTEM, *turn("work", 6, answered=False)]
    user = 1
    # Keep three: the last three results (the newest, unseen, among them).
    end = used_outputs_end(messages, user, 3)
    assert [m["role"] for m in messages[end:]].count("tool") == 3
    assert messages[end]["role"] == "tool"
    # Results the model has not seen (after its last message) stay whatever ``keep`` says.
    calls = [
        {"id": f"p{n}", "type": "function", "function": {"name": "r", "arguments": "{}"}}
        for n in range(4)
    ]
    parallel: list[Message] = [
        {"role": "assistant", "content": "", "tool_calls": calls},
        *({"role": "tool", "tool_call_id": f"p{n}", "content": LONG} for n in range(4)),
    ]
    messages += parallel
    end = used_outputs_end(messages, user, 1)
    assert messages[end - 1]["role"] == "assistant" and len(messages) - end == 4


def test_the_next_clearing_starts_at_the_turns_first_output_not_cleared_yet() -> None:
    messages = [SYSTEM, *turn("work", 5, answered=False)]
    assert first_clearable_in_turn(messages) == 3
    cleared = f"{PRUNED_OUTPUT_PREFIX} read, 2,000 chars"
    messages[3] = {**messages[3], "content": cleared}
    messages[5] = {**messages[5], "content": cleared}
    assert first_clearable_in_turn(messages) == 7
    assert first_clearable_in_turn([SYSTEM, *turn("chat", 0)]) is None


def test_the_next_clearing_starts_at_the_call_whose_large_input_it_clears() -> None:
    messages = [SYSTEM, *turn("work", 4, answered=False)]
    for index in (3, 5, 7):
        messages[index] = {**messages[index], "content": "ok"}  # short outputs stay
    assert first_clearable_in_turn(messages) == 9
    edit = {"path": "a.py", "new_text": LONG}
    call = {"id": "c1", "type": "function", "function": {"name": "edit", "arguments": edit}}
    messages[4] = {**messages[4], "tool_calls": [call]}
    assert first_clearable_in_turn(messages) == 4, "the call's own message changes first"


def marked_indices(messages: list[Message], **points: int | None) -> list[int]:
    return sorted(cache_breakpoints(messages, "5m", True, **points))


def test_breakpoints_go_on_the_system_and_the_last_three_by_default() -> None:
    messages = [SYSTEM, *turn("work", 10, answered=False)]
    last = len(messages) - 1
    assert marked_indices(messages) == [0, last - 2, last - 1, last]


def test_after_a_clearing_the_message_before_it_carries_a_breakpoint() -> None:
    messages = [SYSTEM, *turn("work", 10, answered=False)]
    last = len(messages) - 1
    # The clearing changed message 8 on: the prefix up to 7 is read from the cache.
    assert marked_indices(messages, anchor=7) == [0, 7, last - 1, last]
    # And where the next clearing will start is held with one more.
    assert marked_indices(messages, anchor=7, hold=15) == [0, 7, 15, last]
    # An anchor inside the tail needs no breakpoint of its own.
    assert marked_indices(messages, anchor=last - 1) == [0, last - 2, last - 1, last]


def test_breakpoints_never_exceed_four_and_never_mutate_the_history() -> None:
    messages = [SYSTEM, *turn("work", 10, answered=False)]
    before = json.dumps(messages)
    marked = cache_breakpoints(messages, "5m", True, anchor=3, hold=9)
    assert len(marked) == 4
    assert json.dumps(messages) == before
