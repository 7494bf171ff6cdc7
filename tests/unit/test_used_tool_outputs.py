"""Tool outputs the model has used: cleared without a summary when that pays, and a result's
share of the window. The compressor and the pure cost rule; the daemon path is in
tests/gateway/test_clearing_used_outputs.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.attachments import AttachmentRef, attachment_of, attachment_part
from agent.compressor.context_compressor import ContextCompressor
from agent.engines.toolkit.tool_output_pruning import PRUNED_INPUT_KEY, PRUNED_OUTPUT_PREFIX
from agent.model_table import lookup_model
from agent.policy.context_policy import requests_per_turn, should_prune
from agent.policy.cost_model import Prices
from agent.tokens import cache_messages_tokens
from agent.tools.tool_output import DEFAULT_MAX_TOOL_RESULT_TOKENS, result_limit
from agent.types import Message
from tests.unit.test_context_compressor import FakeSummaryModel, history, prose

SONNET = Prices.of(lookup_model("claude-sonnet-4-5"))


def tool_loop(
    steps: int, *, output_chars: int = 6_000, edit_chars: int | None = None
) -> list[Message]:
    """A new request answered by ``steps`` read_file calls in a row (one turn, no reply yet);
    with ``edit_chars`` each call also sends that much new text (an edit)."""
    messages: list[Message] = [{"role": "user", "content": "Compare every module", "_id": 500}]
    for step in range(steps):
        arguments: dict[str, str] = {"path": f"m{step}.py"}
        if edit_chars is not None:
            arguments["new_text"] = prose(100 + step, edit_chars)
        call = {
            "id": f"loop{step}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps(arguments)},
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call], "_id": 501 + 2 * step},
            {
                "role": "tool",
                "tool_call_id": f"loop{step}",
                "content": f"m{step}.py\n" + prose(step, output_chars),
                "_id": 502 + 2 * step,
            },
        ]
    return messages


def compressor(**overrides: Any) -> ContextCompressor:
    settings: dict[str, Any] = {"protect_last_n": 20, **overrides}
    return ContextCompressor(20_000, call_llm=FakeSummaryModel(), **settings)


def cleared(message: Message) -> bool:
    return str(message.get("content", "")).startswith(PRUNED_OUTPUT_PREFIX)


def test_the_outputs_of_earlier_turns_are_cleared_and_the_new_message_kept() -> None:
    messages = history(4, output_chars=6_000, reply_chars=40)
    messages.append({"role": "user", "content": "And now the tests?", "_id": 99})

    result = compressor().prune_used(messages)

    assert result is not None and (result.trigger, result.outcome) == ("prune", "pruned_only")
    tools = [m for m in result.messages if m.get("role") == "tool"]
    assert len(tools) == 4 and all(cleared(m) for m in tools)
    assert result.messages[-1] is messages[-1]
    assert result.tokens_after == cache_messages_tokens(result.messages) < result.tokens_before
    # Nothing else changed: every message but the outputs is the same dict.
    changed = [i for i, (a, b) in enumerate(zip(result.messages, messages, strict=True)) if a != b]
    assert changed == [i for i, m in enumerate(messages) if m.get("role") == "tool"]


def test_in_a_long_tool_loop_only_the_recent_results_stay() -> None:
    messages = history(1, output_chars=200, reply_chars=40) + tool_loop(8)

    result = compressor().prune_used(messages)

    assert result is not None
    loop = [m for m in result.messages if str(m.get("tool_call_id", "")).startswith("loop")]
    assert cleared(loop[0]) and not cleared(loop[-1])
    assert loop[-1] is messages[-1]  # the result the model is about to read


def test_the_large_inputs_of_used_calls_are_cleared_even_when_their_outputs_are_short() -> None:
    messages = history(1, output_chars=200, reply_chars=40) + tool_loop(
        8, output_chars=60, edit_chars=3_000
    )

    result = compressor().prune_used(messages)

    assert result is not None and result.tokens_after < result.tokens_before
    calls = [
        (index, call)
        for index, message in enumerate(result.messages)
        for call in message.get("tool_calls") or []
        if str(call["id"]).startswith("loop")
    ]
    inputs = [json.loads(call["function"]["arguments"]) for _, call in calls]
    assert [list(args) for args in inputs[:5]] == [[PRUNED_INPUT_KEY]] * 5
    assert inputs[0][PRUNED_INPUT_KEY].endswith(
        'chars; tool_output {"call": "loop0", "part": "input"} reads it'
    )
    # The newest three calls (the results the model works from) keep their inputs; ids and
    # names stay, so every result still answers its call.
    assert all("new_text" in args for args in inputs[5:])
    assert [call["id"] for _, call in calls] == [f"loop{n}" for n in range(8)]
    assert {call["function"]["name"] for _, call in calls} == {"read_file"}
    for index, _ in calls[5:]:
        assert result.messages[index] is messages[index]
    outputs = [m for m in result.messages if str(m.get("tool_call_id", "")).startswith("loop")]
    assert not any(cleared(m) for m in outputs), "short outputs say more than a placeholder"


def test_small_inputs_stay_and_an_unseen_call_keeps_its_input() -> None:
    messages = history(1, output_chars=200, reply_chars=40) + tool_loop(6, output_chars=6_000)
    result = compressor().prune_used(messages)
    assert result is not None
    for new, old in zip(result.messages, messages, strict=True):
        if old.get("tool_calls"):
            assert new is old  # a path is shorter than its placeholder
    # A call whose result the model has not read yet keeps its input whatever its size.
    unseen = [*history(1, output_chars=100, reply_chars=40), *tool_loop(1, edit_chars=3_000)]
    assert compressor().prune_used(unseen) is None


def test_nothing_used_or_pruning_off_means_no_prune() -> None:
    fresh = history(1, output_chars=100, reply_chars=40)
    fresh.append({"role": "user", "content": "hi", "_id": 99})
    assert compressor().prune_used(fresh) is None
    used = [*history(4, output_chars=6000), {"role": "user", "content": "next", "_id": 99}]
    assert compressor(prune_tail=False).prune_used(used) is None


async def test_compact_with_the_prune_trigger_is_the_same_clearing() -> None:
    messages = history(4, output_chars=6_000, reply_chars=40)
    messages.append({"role": "user", "content": "next", "_id": 99})
    engine = compressor()

    result = await engine.compact(messages, "prune")
    expected = engine.prune_used(messages)

    assert expected is not None
    assert [m.get("content") for m in result.messages] == [
        m.get("content") for m in expected.messages
    ]
    untouched = [*history(1, output_chars=100), {"role": "user", "content": "hi", "_id": 9}]
    skipped = await engine.compact(untouched, "prune")
    assert skipped.outcome == "skipped" and skipped.messages == untouched


async def test_a_threshold_compaction_clears_the_tail_beyond_its_budget_unless_off() -> None:
    # The turn fits the room after a summary, so the last 20 messages are its protected tail.
    messages = history(1, output_chars=200, reply_chars=40) + tool_loop(6, output_chars=4_000)

    pruning = await compressor().compact(messages, "agent")
    keeping = await compressor(prune_tail=False).compact(messages, "agent")

    def loop_outputs(out: list[Message]) -> list[Message]:
        return [m for m in out if str(m.get("tool_call_id", "")).startswith("loop")]

    assert cleared(loop_outputs(pruning.messages)[0])
    assert not cleared(loop_outputs(pruning.messages)[-1])
    assert not any(cleared(m) for m in loop_outputs(keeping.messages))


async def test_a_cold_compaction_clears_the_last_turns_outputs_too() -> None:
    messages = history(6, output_chars=6_000, reply_chars=40)

    result = await compressor().compact(messages, "idle")

    assert all(cleared(m) for m in result.messages if m.get("role") == "tool")


def test_a_warm_prune_pays_when_the_rewrite_is_small_beside_what_it_saves() -> None:
    assert should_prune(10_000, 500, cold=False, main=SONNET).pays
    assert not should_prune(2_000, 5_000, cold=False, main=SONNET).pays
    assert not should_prune(0, 0, cold=False, main=SONNET).pays


def test_a_cold_prune_always_pays_since_everything_is_written_anyway() -> None:
    decision = should_prune(1_000, 50_000, cold=True, main=SONNET)
    assert decision.pays and decision.cost_usd == 0.0


@pytest.mark.parametrize(
    ("configured", "window", "expected"),
    [
        ("auto", 200_000, DEFAULT_MAX_TOOL_RESULT_TOKENS),
        ("auto", 32_000, 2_560),
        ("auto", 4_000, 500),
        (20_000, 32_000, 20_000),
    ],
)
def test_a_result_keeps_at_most_a_share_of_the_window_unless_set(
    configured: int | str, window: int, expected: int
) -> None:
    assert result_limit(configured, window) == expected


def photo_request(text: str) -> Message:
    ref = AttachmentRef("photo", "ab" * 32, "image/jpeg", 1000, width=800, height=600)
    return {
        "role": "user",
        "content": [attachment_part(ref, b"jpeg"), {"type": "text", "text": text}],
    }


def has_photo(message: Message) -> bool:
    return any(
        attachment_of(part) is not None and part["type"] == "image_url"
        for part in message["content"]
    )


def test_the_request_being_answered_keeps_its_photo_at_any_prune() -> None:
    alone = [{"role": "system", "content": "You help.", "_id": 1}, photo_request("what is it?")]
    assert compressor().prune_used(alone) is None

    earlier = history(4, output_chars=6_000, reply_chars=40)
    request = photo_request("compare with the logs")
    result = compressor().prune_used([*earlier, request, *tool_loop(6)[1:]])
    assert result is not None
    assert has_photo(result.messages[len(earlier)])


async def test_a_compaction_clearing_the_tail_keeps_the_turns_photo() -> None:
    messages = [*history(1, output_chars=200, reply_chars=40), photo_request("look")]
    messages += tool_loop(6, output_chars=4_000)[1:]
    for trigger in ("agent", "cold_start"):
        result = await compressor().compact(messages, trigger)
        kept = [
            m for m in result.messages if m.get("role") == "user" and isinstance(m["content"], list)
        ]
        assert kept and all(has_photo(m) for m in kept), trigger


def test_an_agent_at_work_makes_several_requests_a_turn_a_chat_one() -> None:
    chat = [
        {"role": "system", "content": "s"},
        *[{"role": r, "content": "x"} for _ in range(5) for r in ("user", "assistant")],
    ]
    assert requests_per_turn(chat) == 1.0
    # One request answered by two assistant messages, then eight tool steps of the same turn.
    working = history(1, output_chars=100) + tool_loop(8)[1:]
    assert requests_per_turn(working) == 10.0
    rewrite, saved = 3_000, 4_000
    assert not should_prune(saved, rewrite, cold=False, main=SONNET, expected_requests=2).pays
    assert should_prune(saved, rewrite, cold=False, main=SONNET, expected_requests=20).pays
