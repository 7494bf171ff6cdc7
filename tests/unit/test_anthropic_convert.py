"""Chat-completions history to Anthropic Messages requests, and Anthropic replies back."""

from __future__ import annotations

import copy
import json
from typing import Any

import anthropic.types

from agent.prompt_caching import apply_anthropic_cache_control
from agent.providers.anthropic.convert import (
    CONTINUES_PLACEHOLDER,
    EMPTY_PLACEHOLDER,
    MISSING_RESULT_TEXT,
    to_anthropic_request,
)
from agent.providers.anthropic.response import from_anthropic_message

MARK = {"type": "ephemeral"}


def call(call_id: str, name: str = "lookup", arguments: str = '{"q": "x"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


LOOKUP_TOOL = {
    "name": "lookup",
    "description": "Look a thing up.",
    "input_schema": {"type": "object"},
}


def convert(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The request for ``messages``, offering the lookup tool unless told otherwise."""
    return to_anthropic_request(messages, [LOOKUP_TOOL] if tools is None else tools)


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


# ---------------------------------------------------------------- system and plain turns


def test_system_messages_become_system_blocks_keeping_their_markers() -> None:
    request = convert(
        [
            {"role": "system", "content": [text("rules", cache_control=MARK)]},
            {"role": "system", "content": "more rules"},
            {"role": "user", "content": "hi"},
        ]
    )
    assert request["system"] == [text("rules", cache_control=MARK), text("more rules")]
    assert request["messages"] == [{"role": "user", "content": [text("hi")]}]


def test_a_top_level_marker_on_a_system_message_lands_on_its_last_block() -> None:
    request = convert([{"role": "system", "content": "rules", "cache_control": MARK}])
    assert request["system"] == [text("rules", cache_control=MARK)]


def test_bookkeeping_keys_never_reach_the_wire() -> None:
    request = convert(
        [
            {"role": "user", "content": [text("hi", _tokens=3)], "_id": 7, "_tokens": 3},
            {"role": "assistant", "content": "yo", "_id": 8},
        ],
        tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}, "_x": 1}],
    )
    assert '"_' not in json.dumps(request)


def test_consecutive_same_role_messages_are_merged_into_one_turn() -> None:
    request = convert(
        [
            {"role": "user", "content": "one"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "three"},
            {"role": "assistant", "content": "four"},
        ]
    )
    assert request["messages"] == [
        {"role": "user", "content": [text("one"), text("two")]},
        {"role": "assistant", "content": [text("three"), text("four")]},
    ]


def test_blank_text_is_dropped_and_an_emptied_message_gets_a_placeholder() -> None:
    request = convert(
        [
            {"role": "user", "content": [text(""), text("kept"), text("   ")]},
            {"role": "assistant", "content": None},
            {"role": "user", "content": ""},
        ]
    )
    assert request["messages"] == [
        {"role": "user", "content": [text("kept")]},
        {"role": "assistant", "content": [text(EMPTY_PLACEHOLDER)]},
        {"role": "user", "content": [text(EMPTY_PLACEHOLDER)]},
    ]


def test_a_history_that_does_not_start_with_the_user_gets_an_opening_user_turn() -> None:
    request = convert(
        [{"role": "system", "content": "s"}, {"role": "assistant", "content": "hello"}]
    )
    assert request["messages"][0] == {"role": "user", "content": [text(CONTINUES_PLACEHOLDER)]}
    assert request["messages"][1]["role"] == "assistant"
    assert convert([])["messages"] == [{"role": "user", "content": [text(CONTINUES_PLACEHOLDER)]}]


def test_a_final_assistant_prefill_loses_its_trailing_whitespace() -> None:
    request = convert(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "The answer is "}]
    )
    assert request["messages"][-1]["content"] == [text("The answer is")]


def test_image_data_urls_become_base64_image_blocks_and_web_urls_url_sources() -> None:
    request = convert(
        [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                    {"type": "image_url", "image_url": {"url": "https://example.org/cat.jpg"}},
                    {"type": "text", "text": "what is this?", "cache_control": MARK},
                ],
            }
        ]
    )
    assert request["messages"][0]["content"] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.org/cat.jpg"}},
        text("what is this?", cache_control=MARK),
    ]


# ---------------------------------------------------------------- tools


def test_tool_calls_become_tool_use_blocks_with_parsed_arguments() -> None:
    request = convert(
        [
            {"role": "user", "content": "find x"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "found"},
        ]
    )
    assert request["messages"][1] == {
        "role": "assistant",
        "content": [
            text("Looking."),
            {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "x"}},
        ],
    }
    assert request["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "found"}],
    }


def test_invalid_or_non_object_tool_arguments_are_kept_raw() -> None:
    request = convert(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("a", arguments="{oops"), call("b", arguments="[1]")],
            },
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
        ]
    )
    inputs = [b["input"] for b in request["messages"][1]["content"]]
    assert inputs == [{"_raw": "{oops"}, {"_raw": "[1]"}]


def test_parallel_tool_results_share_one_user_turn_and_come_before_user_text() -> None:
    request = convert(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
            {"role": "user", "content": "(a message that arrived meanwhile)"},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "tool", "tool_call_id": "b", "content": "B"},
        ]
    )
    assert len(request["messages"]) == 3
    kinds = [(b["type"], b.get("tool_use_id")) for b in request["messages"][2]["content"]]
    assert kinds == [("tool_result", "a"), ("tool_result", "b"), ("text", None)]


def test_a_top_level_marker_on_a_tool_message_lands_on_its_tool_result() -> None:
    request = convert(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "A", "cache_control": MARK},
        ]
    )
    (result,) = request["messages"][2]["content"]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": "A",
        "cache_control": MARK,
    }


def test_a_top_level_marker_on_an_empty_assistant_tool_call_lands_on_the_last_tool_use() -> None:
    request = convert(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("a"), call("b")],
                "cache_control": MARK,
            },
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "tool", "tool_call_id": "b", "content": "B"},
        ]
    )
    blocks = request["messages"][1]["content"]
    assert "cache_control" not in blocks[0]
    assert blocks[1]["cache_control"] == MARK


def test_a_tool_result_without_its_tool_use_is_sent_as_plain_text() -> None:
    request = convert(
        [
            {"role": "user", "content": "earlier context was compacted"},
            {"role": "assistant", "content": "ok"},
            {"role": "tool", "tool_call_id": "gone", "content": "stale output"},
        ]
    )
    (block,) = request["messages"][2]["content"]
    assert block["type"] == "text"
    assert "stale output" in block["text"] and "gone" in block["text"]


def test_a_tool_call_whose_result_is_missing_gets_an_error_result_so_the_request_is_valid() -> None:
    request = convert(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "B"},
            {"role": "user", "content": "/stop happened; new question"},
        ]
    )
    blocks = request["messages"][2]["content"]
    assert blocks[0] == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": MISSING_RESULT_TEXT,
        "is_error": True,
    }
    assert blocks[1]["tool_use_id"] == "b"
    assert blocks[2] == text("/stop happened; new question")


def test_repeated_or_malformed_tool_ids_are_made_unique_and_stay_paired() -> None:
    request = convert(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("call_0")]},
            {"role": "tool", "tool_call_id": "call_0", "content": "first"},
            {"role": "assistant", "content": None, "tool_calls": [call("call_0"), call("a.b")]},
            {"role": "tool", "tool_call_id": "call_0", "content": "second"},
            {"role": "tool", "tool_call_id": "a.b", "content": "third"},
        ]
    )
    uses = [b["id"] for m in request["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert uses == ["call_0", "call_0_2", "a_b"]
    results = [
        (b["tool_use_id"], b["content"])
        for m in request["messages"]
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert results == [("call_0", "first"), ("call_0_2", "second"), ("a_b", "third")]


def test_without_tools_the_tool_history_is_sent_as_text() -> None:
    request = convert(
        [
            {"role": "user", "content": "find x"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": "found", "cache_control": MARK},
        ],
        tools=[],
    )
    assert request["tools"] == []
    assert '"tool_use"' not in json.dumps(request) and '"tool_result"' not in json.dumps(request)
    assert request["messages"][1]["content"] == [text('[tool call lookup {"q": "x"}]')]
    (result,) = request["messages"][2]["content"]
    assert result["type"] == "text" and "found" in result["text"]
    assert result["cache_control"] == MARK


def test_tool_schemas_pass_through_and_openai_function_schemas_are_converted() -> None:
    anthropic_form = {"name": "a", "description": "A", "input_schema": {"type": "object"}}
    openai_form = {
        "type": "function",
        "function": {"name": "b", "description": "B", "parameters": {"type": "object"}},
    }
    request = convert([{"role": "user", "content": "x"}], tools=[anthropic_form, openai_form])
    assert request["tools"] == [
        anthropic_form,
        {"name": "b", "description": "B", "input_schema": {"type": "object"}},
    ]


def test_conversion_never_mutates_the_history() -> None:
    messages = [
        {"role": "system", "content": "s", "cache_control": MARK},
        {"role": "user", "content": [text("q", cache_control=MARK)], "_id": 1},
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "A", "cache_control": MARK},
        {"role": "assistant", "content": "done "},
    ]
    before = copy.deepcopy(messages)
    convert(messages)
    assert messages == before


def test_native_cache_markers_survive_conversion_one_for_one() -> None:
    history = [{"role": "system", "content": "s"}]
    for n in range(3):
        history += [
            {"role": "user", "content": f"q{n}"},
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{n}")]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"r{n}"},
        ]
    request = convert(apply_anthropic_cache_control(history, native_anthropic=True))
    wire = json.dumps(request)
    assert wire.count('"cache_control"') == 4
    last_user = request["messages"][-1]["content"]
    assert last_user[-1]["type"] == "tool_result" and last_user[-1]["cache_control"] == MARK


# ---------------------------------------------------------------- replies


def test_a_reply_with_text_and_tool_use_becomes_an_assistant_message_with_tool_calls() -> None:
    response = from_anthropic_message(
        {
            "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "é"}},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )
    assert response.message == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": "é"}'},
            }
        ],
    }
    assert response.stop_reason == "tool_use"


def test_a_tool_only_reply_has_no_content_and_a_text_reply_joins_its_blocks() -> None:
    tool_only = from_anthropic_message(
        {"content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}], "usage": {}}
    )
    assert tool_only.message["content"] is None
    joined = from_anthropic_message(
        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "usage": {}}
    )
    assert joined.message == {"role": "assistant", "content": "a\nb"}


def test_usage_is_normalised_with_the_one_hour_write_part_listed_separately() -> None:
    message = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 12,
                "output_tokens": 7,
                "cache_read_input_tokens": 9_000,
                "cache_creation_input_tokens": 1_500,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 500,
                    "ephemeral_1h_input_tokens": 1_000,
                },
            },
        }
    )
    usage = from_anthropic_message(message).usage
    assert (usage.input_tokens, usage.output_tokens) == (12, 7)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (9_000, 1_500)
    assert usage.cache_write_1h_tokens == 1_000
    assert usage.prompt_tokens == 12 + 9_000 + 1_500
    assert usage.model == "claude-sonnet-4-5-20250929"


def test_calls_of_tools_no_longer_offered_are_sent_as_text_with_their_results():
    call = {
        "id": "toolu_1",
        "type": "function",
        "function": {"name": "lcm_grep", "arguments": "{}"},
    }
    kept = {
        "id": "toolu_2",
        "type": "function",
        "function": {"name": "calculator", "arguments": "{}"},
    }
    messages = [
        {"role": "user", "content": "search"},
        {"role": "assistant", "content": None, "tool_calls": [call, kept]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "hits"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "4"},
        {"role": "user", "content": "thanks"},
    ]
    tools = [{"name": "calculator", "description": "", "input_schema": {"type": "object"}}]
    wire = to_anthropic_request(messages, tools)["messages"]
    kinds = [[b["type"] for b in m["content"]] for m in wire]
    assert kinds[1] == ["text", "tool_use"]
    assert "lcm_grep" in wire[1]["content"][0]["text"]
    assert wire[1]["content"][1]["name"] == "calculator"
    assert any(b.get("tool_use_id") == "toolu_2" for b in wire[2]["content"])
    assert not any(b.get("tool_use_id") == "toolu_1" for b in wire[2]["content"])
