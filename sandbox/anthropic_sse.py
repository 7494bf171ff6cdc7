"""Server-sent events of a streamed Messages API response, in the real API's order and shape.

message_start (usage with the input side and ``output_tokens: 1``), ping, then per content
block: content_block_start, content_block_delta (text_delta / input_json_delta pieces),
content_block_stop; then message_delta (stop_reason and the final usage) and message_stop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

TEXT_CHUNK_CHARS = 24
JSON_CHUNK_CHARS = 16
STREAM_START_OUTPUT_TOKENS = 1

SseEvent = tuple[str, dict[str, Any]]


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE frame: ``event:`` line, ``data:`` line, blank line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


def _block_events(index: int, block: dict[str, Any]) -> Iterator[SseEvent]:
    if block.get("type") == "tool_use":
        start = {**block, "input": {}}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        pieces = ["", *_chunks(json.dumps(block.get("input", {})), JSON_CHUNK_CHARS)]
        for piece in pieces:
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
    else:
        start = {"type": "text", "text": ""}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for piece in _chunks(str(block.get("text", "")), TEXT_CHUNK_CHARS):
            delta = {"type": "text_delta", "text": piece}
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def message_events(message: dict[str, Any]) -> Iterator[SseEvent]:
    """The full event sequence of a finished (non-stream) response message."""
    usage = message["usage"]
    start_usage = {**usage, "output_tokens": STREAM_START_OUTPUT_TOKENS}
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    final_usage = {
        key: usage[key]
        for key in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
    }
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": final_usage}
    yield "message_stop", {"type": "message_stop"}


def interrupted_events(
    message: dict[str, Any], error_type: str, error_message: str
) -> Iterator[SseEvent]:
    """A stream that starts normally, breaks off in its first content block with an error event."""
    for name, data in message_events(message):
        if name == "message_delta":
            break
        yield name, data
        if name == "content_block_delta":
            break
    yield "error", {"type": "error", "error": {"type": error_type, "message": error_message}}


def truncated_events(message: dict[str, Any]) -> Iterator[SseEvent]:
    """A stream that ends (the connection closed cleanly) right after ``message_start``: no
    content, no ``message_stop``, no error event."""
    for name, data in message_events(message):
        yield name, data
        if name == "message_start":
            return
