"""Cache-breakpoint placement ("system_and_3") and the caching policy per provider and model."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.prompt_caching import (
    CachePolicy,
    apply_anthropic_cache_control,
    caching_policy,
    caching_status_line,
)

MARK_5M = {"type": "ephemeral"}
MARK_1H = {"type": "ephemeral", "ttl": "1h"}


def markers_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cache_control marker a message carries, top-level or on a content part."""
    found = [message["cache_control"]] if "cache_control" in message else []
    content = message.get("content")
    if isinstance(content, list):
        found += [
            p["cache_control"] for p in content if isinstance(p, dict) and "cache_control" in p
        ]
    return found


def marked_indexes(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if markers_of(m)]


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"question {n}", "_id": n})
        messages.append({"role": "assistant", "content": f"answer {n}"})
    return messages


def tool_exchange(call_id: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "what time is it?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "clock", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "12:00"},
    ]


def test_system_and_last_three_messages_get_markers_and_nothing_else() -> None:
    messages = conversation(5)
    marked = apply_anthropic_cache_control(messages)
    assert marked_indexes(marked) == [0, 8, 9, 10]


def test_string_content_becomes_a_single_text_part_carrying_the_marker() -> None:
    marked = apply_anthropic_cache_control(conversation(1))
    assert marked[0]["content"] == [
        {"type": "text", "text": "You are helpful.", "cache_control": MARK_5M}
    ]
    assert marked[2]["content"] == [{"type": "text", "text": "answer 0", "cache_control": MARK_5M}]


def test_list_content_gets_the_marker_on_its_last_part_only() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    message = {"role": "user", "content": [{"type": "text", "text": "look"}, image]}
    (marked,) = apply_anthropic_cache_control([message])
    assert marked["content"][0] == {"type": "text", "text": "look"}
    assert marked["content"][1] == {**image, "cache_control": MARK_5M}


def test_a_blank_trailing_text_part_is_skipped_because_the_provider_drops_it() -> None:
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": " "}],
    }
    (marked,) = apply_anthropic_cache_control([message])
    assert marked["content"][0]["cache_control"] == MARK_5M
    assert "cache_control" not in marked["content"][1]


def test_one_hour_ttl_uses_the_ttl_marker() -> None:
    marked = apply_anthropic_cache_control(conversation(2), cache_ttl="1h")
    assert all(markers_of(marked[i]) == [MARK_1H] for i in marked_indexes(marked))


def test_an_unsupported_ttl_is_refused() -> None:
    with pytest.raises(ValueError):
        apply_anthropic_cache_control(conversation(1), cache_ttl="30m")


def test_the_input_is_never_mutated_and_unmarked_messages_are_the_same_objects() -> None:
    messages = conversation(30) + tool_exchange("call_1")
    before = copy.deepcopy(messages)
    marked = apply_anthropic_cache_control(messages, native_anthropic=True)
    assert messages == before
    assert marked is not messages
    copied = [i for i, (a, b) in enumerate(zip(messages, marked, strict=True)) if a is not b]
    assert copied == marked_indexes(marked)
    assert len(copied) == 4


def test_native_layout_marks_tool_results_and_empty_messages_at_top_level() -> None:
    messages = [{"role": "system", "content": "sys"}, *tool_exchange("call_1")]
    marked = apply_anthropic_cache_control(messages, native_anthropic=True)
    assert marked[3]["cache_control"] == MARK_5M
    assert marked[3]["content"] == "12:00"
    assert marked[2]["cache_control"] == MARK_5M
    assert marked[2]["content"] == ""
    assert marked[1]["content"][0]["cache_control"] == MARK_5M


def test_openrouter_layout_skips_tool_and_empty_messages_for_the_next_earlier_one() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "second"},
        *tool_exchange("call_1"),
    ]
    marked = apply_anthropic_cache_control(messages, native_anthropic=False)
    assert marked_indexes(marked) == [0, 1, 2, 3]
    assert all("cache_control" not in m for m in marked)
    assert marked[4] is messages[4] and marked[5] is messages[5]


def test_without_a_system_message_only_three_markers_are_placed() -> None:
    messages = conversation(4)[1:]
    assert len(marked_indexes(apply_anthropic_cache_control(messages))) == 3


def test_a_short_history_marks_what_there_is() -> None:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    assert marked_indexes(apply_anthropic_cache_control(messages)) == [0, 1]
    assert apply_anthropic_cache_control([]) == []


# ---------------------------------------------------------------- property

_text = st.one_of(st.none(), st.just(""), st.just("  "), st.text(min_size=1, max_size=12))
_part = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=8)),
    st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}),
)
_content = st.one_of(_text, st.lists(_part, max_size=3))
_message = st.one_of(
    st.builds(lambda c: {"role": "system", "content": c}, _content),
    st.builds(lambda c: {"role": "user", "content": c}, _content),
    st.builds(lambda c: {"role": "assistant", "content": c}, _content),
    st.builds(lambda c: {"role": "tool", "tool_call_id": "t", "content": c}, _content),
)


def can_carry(message: dict[str, Any], native: bool) -> bool:
    if native:
        return True
    content = message.get("content")
    if message["role"] == "tool" or content is None:
        return False
    if isinstance(content, str):
        return bool(content.strip())
    return any(p["type"] != "text" or p["text"].strip() for p in content)


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(_message, max_size=12),
    native=st.booleans(),
    ttl=st.sampled_from(["5m", "1h"]),
)
def test_any_history_gets_at_most_four_markers_in_the_right_places(
    messages: list[dict[str, Any]], native: bool, ttl: str
) -> None:
    before = copy.deepcopy(messages)
    marked = apply_anthropic_cache_control(messages, cache_ttl=ttl, native_anthropic=native)

    assert messages == before
    assert len(marked) == len(messages)
    all_markers = [mark for m in marked for mark in markers_of(m)]
    assert len(all_markers) <= 4
    assert all(mark == (MARK_1H if ttl == "1h" else MARK_5M) for mark in all_markers)
    assert all(len(markers_of(m)) <= 1 for m in marked)

    systems = [i for i, m in enumerate(messages) if m["role"] == "system"]
    if systems and can_carry(messages[systems[0]], native):
        assert markers_of(marked[systems[0]])
    expected_tail = [
        i for i, m in enumerate(messages) if m["role"] != "system" and can_carry(m, native)
    ][-3:]
    marked_tail = [i for i in marked_indexes(marked) if messages[i]["role"] != "system"]
    assert marked_tail == expected_tail
    for original, new in zip(messages, marked, strict=True):
        assert (original is new) == (not markers_of(new))


# ---------------------------------------------------------------- policy


def test_claude_on_the_native_provider_is_cached_in_the_native_layout() -> None:
    policy = caching_policy("anthropic", "claude-sonnet-4-5", None, "5m")
    assert policy == CachePolicy(True, True, "5m", "Claude native")
    assert caching_status_line(policy) == "💾 Prompt caching: ENABLED (Claude native, 5m TTL)"


def test_claude_through_openrouter_is_cached_in_the_content_part_layout() -> None:
    policy = caching_policy("openrouter", "anthropic/claude-sonnet-4.5", None, "1h")
    assert policy.enabled and not policy.native_anthropic
    assert caching_status_line(policy) == (
        "💾 Prompt caching: ENABLED (Claude via OpenRouter, 1h TTL)"
    )


def test_an_openrouter_base_url_counts_as_openrouter() -> None:
    policy = caching_policy(
        "openai_compat", "anthropic/claude-haiku-4.5", "https://openrouter.ai/api/v1", "5m"
    )
    assert policy.enabled and not policy.native_anthropic


def test_models_without_prompt_caching_are_not_marked() -> None:
    policy = caching_policy("openrouter", "openai/gpt-4o", None, "5m")
    assert not policy.enabled
    assert caching_status_line(caching_policy("openai_compat", "gpt-4o", None, "5m")) == (
        "💾 Prompt caching: DISABLED (model gpt-4o does not support it)"
    )


def test_claude_behind_an_unknown_compatible_endpoint_is_not_marked() -> None:
    policy = caching_policy("openai_compat", "claude-sonnet-4-5", "http://127.0.0.1:8000/v1", "5m")
    assert not policy.enabled


def test_the_policy_refuses_an_unsupported_ttl() -> None:
    with pytest.raises(ValueError):
        caching_policy("anthropic", "claude-sonnet-4-5", None, "2h")
