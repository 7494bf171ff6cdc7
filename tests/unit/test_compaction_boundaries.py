"""Where a compaction cuts: head and tail alignment, the last user request, summary role, repair."""

from __future__ import annotations

from agent.engines.toolkit.boundaries import (
    COMPACTED_RESULT_STUB,
    SUMMARY_PREFIX,
    CompactionLayout,
    align_head_forward,
    choose_summary_role,
    group_start,
    is_summary_message,
    plan_layout,
    repair_tool_pairs,
    summary_text,
    tail_start_by_budget,
    tail_start_by_count,
)
from agent.types import Message


def user(text: str = "hi") -> Message:
    return {"role": "user", "content": text}


def assistant(text: str | None = "ok", *call_ids: str) -> Message:
    message: Message = {"role": "assistant", "content": text}
    if call_ids:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": "shell", "arguments": "{}"}}
            for cid in call_ids
        ]
    return message


def tool(call_id: str, text: str = "out") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


SYSTEM: Message = {"role": "system", "content": "be useful"}


def test_head_moves_forward_over_the_results_of_a_call_it_contains() -> None:
    messages = [SYSTEM, user(), assistant(None, "a", "b"), tool("a"), tool("b"), user()]
    assert align_head_forward(messages, 3) == 5


def test_head_that_ends_on_a_plain_message_stays_where_it_is() -> None:
    messages = [SYSTEM, user(), assistant(), user()]
    assert align_head_forward(messages, 3) == 3


def test_group_start_walks_back_over_parallel_results_to_the_calling_message() -> None:
    messages = [SYSTEM, user(), assistant(None, "a", "b", "c"), tool("a"), tool("b"), tool("c")]
    assert group_start(messages, 5) == 2
    assert group_start(messages, 1) == 1


def test_budget_tail_keeps_whole_groups_that_fit_the_budget() -> None:
    messages = [SYSTEM, user(), assistant(), user(), assistant(None, "a"), tool("a"), assistant()]
    sizes = [10, 10, 10, 10, 10, 10, 10]
    assert tail_start_by_budget(messages, sizes, 3, budget=30) == 4
    assert tail_start_by_budget(messages, sizes, 3, budget=25) == 6


def test_budget_tail_always_keeps_the_last_group_even_when_it_is_over_budget() -> None:
    messages = [SYSTEM, user(), assistant(), user(), assistant(None, "a"), tool("a", "x")]
    sizes = [10, 10, 10, 10, 10, 5_000]
    assert tail_start_by_budget(messages, sizes, 3, budget=100) == 4


def test_count_tail_never_starts_on_a_tool_result() -> None:
    messages = [
        SYSTEM,
        user(),
        assistant(),
        user(),
        assistant(None, "a", "b"),
        tool("a"),
        tool("b"),
    ]
    assert tail_start_by_count(messages, 3, 1) == 4


def plan(messages: list[Message], sizes: list[int], **overrides: int) -> CompactionLayout:
    settings = {
        "protect_first_n": 3,
        "protect_last_n": 2,
        "tail_token_budget": 20,
        "threshold_tokens": 100,
    }
    settings.update(overrides)
    return plan_layout(messages, sizes, **settings)


def test_tail_uses_protect_last_n_when_the_budget_protects_fewer_messages() -> None:
    messages = [SYSTEM, user(), assistant(), *[user(), assistant()] * 5]
    sizes = [5] * len(messages)
    layout = plan(messages, sizes, protect_last_n=5, tail_token_budget=10)
    assert layout.tail_start == len(messages) - 5


def test_tail_always_reaches_back_to_the_last_user_message() -> None:
    calls = [m for i in range(4) for m in (assistant(None, f"c{i}"), tool(f"c{i}"))]
    messages = [SYSTEM, user(), assistant(), user("old"), assistant(), user("task"), *calls]
    sizes = [5] * len(messages)
    layout = plan(messages, sizes, protect_last_n=2, tail_token_budget=10, threshold_tokens=1_000)
    assert layout.tail_start <= 5
    assert layout.pinned is None


def test_tail_above_threshold_shrinks_to_the_token_budget() -> None:
    messages = [SYSTEM, user(), assistant(), *[user("u"), assistant("a")] * 10]
    sizes = [10] * len(messages)
    layout = plan(messages, sizes, protect_last_n=20, tail_token_budget=40, threshold_tokens=150)
    # Four messages fit the budget; one more (an assistant reply) is kept so the summary, a
    # user turn after the head's assistant, alternates with the tail.
    assert len(messages) - layout.tail_start == 5
    assert layout.summary_role == "user"


def test_last_request_too_far_back_is_pinned_instead_of_summarised() -> None:
    calls = [m for i in range(6) for m in (assistant(None, f"c{i}"), tool(f"c{i}", "big"))]
    messages = [SYSTEM, user(), assistant(), user("u1"), assistant("a1"), user("task"), *calls]
    sizes = [10] * 6 + [10, 100] * 6
    layout = plan(messages, sizes, protect_last_n=2, tail_token_budget=150, threshold_tokens=400)
    assert layout.pinned is not None
    low, high = layout.pinned
    assert messages[high - 1]["content"] == "task"
    assert 5 not in layout.middle_indices()
    assert messages[layout.tail_start]["role"] == "assistant"
    # The summary (after the head's assistant) must not touch the pinned user turn with the same
    # role, so the reply the request answers is kept with it.
    assert layout.summary_role == "user"
    assert messages[low]["role"] == "assistant"


def test_summary_role_alternates_with_both_neighbours() -> None:
    assert choose_summary_role(assistant(), assistant()) == "user"
    assert choose_summary_role(user(), user()) == "assistant"
    assert choose_summary_role(tool("a"), user()) == "assistant"
    assert choose_summary_role(SYSTEM, assistant()) == "user"
    assert choose_summary_role(assistant(), user()) is None


def test_layout_keeps_one_more_group_when_no_summary_role_fits() -> None:
    messages = [SYSTEM, user(), assistant(), user("u1"), assistant("a1"), user("u2"), assistant()]
    sizes = [10] * len(messages)
    layout = plan(messages, sizes, protect_last_n=2, tail_token_budget=20, threshold_tokens=1_000)
    # The tail would start at the user "u2" after the head's assistant: impossible, so the tail
    # starts one message earlier, at "a1", and the summary is a user turn.
    assert layout.tail_start == 4
    assert layout.summary_role == "user"
    assert layout.middle_indices() == [3]


def test_keeping_more_for_the_summary_role_never_keeps_the_prompt_above_the_threshold() -> None:
    # Found by the compressor's property test: the tail (a big tool output and a big reply)
    # starts on an assistant turn after the head's tool result, so no summary role alternates;
    # keeping three more groups would fix the roles but leave only 91 tokens to summarise,
    # and the compaction could no longer bring the prompt under the threshold.
    messages = [
        SYSTEM, user(""), assistant("", "c1"), tool("c1", ""),
        assistant("", "c2", "c3"), tool("c2", ""), tool("c3", ""), assistant(""), user(""),
        assistant(None, "c4", "c5", "c6"), tool("c4", ""), tool("c5", ""), tool("c6", ""),
        assistant(None, "c7"), tool("c7", ""),
        assistant(None, "c8", "c9", "c10"), tool("c8", ""), tool("c9", ""), tool("c10", "big"),
        assistant("big"), user("small"), assistant("small"),
    ]  # fmt: skip
    sizes = [10, 4, 40, 6, 75, 6, 6, 4, 4, 112, 6, 6, 6, 41, 6, 355, 6, 6, 652, 650, 29, 28]
    reserve = 210
    layout = plan(
        messages,
        sizes,
        protect_last_n=4,
        tail_token_budget=400,
        threshold_tokens=2_000,
        summary_reserve=reserve,
    )
    kept = sum(sizes) - sum(sizes[i] for i in layout.middle_indices())
    assert kept + reserve < 2_000
    assert layout.summary_role == "user"  # no alternating role within reach: providers merge


def test_head_stops_before_an_earlier_summary() -> None:
    summary = {"role": "user", "content": SUMMARY_PREFIX + "old", "_kind": "summary"}
    messages = [SYSTEM, summary, assistant(), user(), assistant()]
    layout = plan(messages, [10] * 5, protect_first_n=3)
    assert layout.head_end == 1
    assert 1 in layout.middle_indices()


def test_summary_messages_are_recognised_by_kind_or_prefix() -> None:
    assert is_summary_message({"role": "user", "content": "x", "_kind": "summary"})
    assert is_summary_message({"role": "assistant", "content": SUMMARY_PREFIX + "text"})
    assert not is_summary_message(user("a normal message"))
    assert summary_text({"role": "user", "content": SUMMARY_PREFIX + "the text"}) == "the text"


def test_repair_removes_results_whose_call_is_gone() -> None:
    messages = [SYSTEM, user(), tool("gone"), assistant()]
    assert repair_tool_pairs(messages) == [SYSTEM, user(), assistant()]


def test_repair_gives_a_stub_result_to_a_call_whose_result_is_gone() -> None:
    call = assistant(None, "a", "b")
    messages = [SYSTEM, user(), call, tool("a"), user("next")]
    repaired = repair_tool_pairs(messages)
    assert repaired[:4] == [SYSTEM, user(), call, tool("a")]
    assert repaired[4] == {"role": "tool", "tool_call_id": "b", "content": COMPACTED_RESULT_STUB}
    assert repaired[5]["content"] == "next"


def test_repair_leaves_the_pending_calls_of_the_newest_message_alone() -> None:
    messages = [SYSTEM, user(), assistant(None, "a")]
    assert repair_tool_pairs(messages) == messages


def test_repair_keeps_unchanged_messages_as_the_same_objects() -> None:
    messages = [SYSTEM, user(), assistant(None, "a"), tool("a"), assistant()]
    repaired = repair_tool_pairs(messages)
    assert all(a is b for a, b in zip(repaired, messages, strict=True))
