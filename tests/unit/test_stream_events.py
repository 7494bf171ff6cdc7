"""A streamed answer folded from its raw events, as the server sends them."""

from __future__ import annotations

from agent.loop import CUT_CALL_NOTICE, _drop_cut_call
from agent.providers.anthropic.response import from_anthropic_message
from agent.providers.anthropic.stream_events import StreamedMessage, parse_input
from agent.types import ModelResponse, Usage

START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 12, "cache_read_input_tokens": 900, "output_tokens": 1},
    },
}


def fold(events: list[dict]) -> tuple[StreamedMessage, list[str]]:
    streamed = StreamedMessage()
    told = [text for event in events if (text := streamed.add(event))]
    return streamed, told


def test_text_and_a_tool_call_come_out_as_the_sdk_would_build_them() -> None:
    events = [
        {"type": "ping"},
        START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Let "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "me look."},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"pa'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'th": "a.py"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"type": "message_delta", "stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 42, "input_tokens": None},
        },
        {"type": "message_stop"},
    ]
    streamed, told = fold(events)

    assert told == ["Let ", "me look."]
    assert streamed.complete
    response = from_anthropic_message(streamed.finish())
    assert response.message["content"] == "Let me look."
    assert response.message["tool_calls"] == [
        {
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path": "a.py"}'},
        }
    ]
    assert response.stop_reason == "tool_use"
    # message_delta's usage sets what it carries (None is no news): input stays from the start.
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 42)
    assert response.usage.cache_read_tokens == 900


def test_a_tool_call_without_input_gets_an_empty_object_and_thinking_is_kept() -> None:
    events = [
        START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hm"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
        },
        {"type": "content_block_stop", "index": 1},
    ]
    streamed, told = fold(events)
    message = streamed.finish()
    assert told == [] and not streamed.complete, "no message_delta: the answer is incomplete"
    assert message is not None
    assert message["content"][0] == {"type": "thinking", "thinking": "hm", "signature": "sig"}
    assert message["content"][1]["input"] == {}


def test_input_cut_short_is_parsed_as_far_as_it_goes() -> None:
    assert parse_input('{"path": "a.py", "text": "half') == {"path": "a.py", "text": "half"}
    assert parse_input("   ") == {}
    assert parse_input("not json") == {"_raw": "not json"}
    assert fold([{"type": "content_block_delta", "index": 0, "delta": {}}])[0].finish() is None


def test_a_call_cut_at_max_tokens_is_not_made_and_the_whole_ones_are() -> None:
    def call(n: int) -> dict:
        return {"id": f"t{n}", "type": "function", "function": {"name": "w", "arguments": "{}"}}

    two = ModelResponse(
        message={"role": "assistant", "content": None, "tool_calls": [call(1), call(2)]},
        usage=Usage(),
        stop_reason="max_tokens",
    )
    _drop_cut_call(two)
    assert two.tool_calls == [call(1)]
    one = ModelResponse(
        message={"role": "assistant", "content": None, "tool_calls": [call(3)]},
        usage=Usage(),
        stop_reason="max_tokens",
    )
    _drop_cut_call(one)
    assert one.tool_calls == [] and one.message["content"] == CUT_CALL_NOTICE
