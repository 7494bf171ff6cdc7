"""A streamed Messages answer put together from its raw events (the JSON objects as sent).

The SDK's own stream helper builds a typed model of every event and a typed snapshot of the
whole message after each one; for the few fields the agent reads that was the largest part of
the daemon's CPU per message. Here each event is the dict the server sent, folded into one
message dict of the shape :func:`~agent.providers.anthropic.response.from_anthropic_message`
reads: the same folding the SDK does (text and thinking appended, a tool call's input JSON
joined and parsed at its block's end, ``message_delta`` setting the stop reason and the usage
fields it carries).
"""

from __future__ import annotations

import json
from typing import Any

Event = dict[str, Any]


class StreamedMessage:
    """The message of one streamed answer, event by event (:meth:`add`)."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        """The message so far; None until ``message_start``."""
        self._json: dict[int, list[str]] = {}
        """The input JSON pieces of each open tool-use block, by block index."""

    @property
    def complete(self) -> bool:
        """Whether the answer said why it stopped (every complete answer does)."""
        return self.message is not None and self.message.get("stop_reason") is not None

    def add(self, event: Event) -> str | None:
        """Fold one event in; returns the answer text it adds, if any."""
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event.get("message") or {})
            message["content"] = list(message.get("content") or [])
            message["usage"] = dict(message.get("usage") or {})
            self.message = message
        elif self.message is None:
            return None  # nothing before message_start means anything
        elif kind == "content_block_start":
            self._start_block(int(event.get("index", 0)), dict(event.get("content_block") or {}))
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index", 0)), event.get("delta") or {})
        elif kind == "content_block_stop":
            self._stop_block(int(event.get("index", 0)))
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            self.message["stop_reason"] = delta.get("stop_reason")
            self.message["stop_sequence"] = delta.get("stop_sequence")
            usage = self.message["usage"]
            usage.update((k, v) for k, v in (event.get("usage") or {}).items() if v is not None)
        return None

    def _blocks(self) -> list[dict[str, Any]]:
        assert self.message is not None
        blocks: list[dict[str, Any]] = self.message["content"]
        return blocks

    def _start_block(self, index: int, block: dict[str, Any]) -> None:
        blocks = self._blocks()
        while len(blocks) <= index:
            blocks.append({})
        blocks[index] = block
        if block.get("type") in ("tool_use", "server_tool_use"):
            self._json[index] = []

    def _delta(self, index: int, delta: dict[str, Any]) -> str | None:
        blocks = self._blocks()
        if index >= len(blocks):
            return None
        block = blocks[index]
        kind = delta.get("type")
        if kind == "text_delta":
            text = str(delta.get("text") or "")
            block["text"] = str(block.get("text") or "") + text
            return text
        if kind == "input_json_delta":
            self._json.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        return None

    def _stop_block(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        blocks = self._blocks()
        if pieces is None or index >= len(blocks):
            return
        blocks[index]["input"] = parse_input("".join(pieces))

    def finish(self) -> dict[str, Any] | None:
        """The message, its tool-use blocks whose end never came parsed as far as they go."""
        for index in list(self._json):
            self._stop_block(index)
        return self.message


def parse_input(raw: str) -> Any:
    """A tool call's input from its joined JSON: ``{}`` when empty; JSON cut short (an answer
    that ran out of tokens) parsed as far as it goes, as the SDK does."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        import jiter  # the SDK's own partial-JSON parser (an SDK dependency)

        try:
            return jiter.from_json(raw.encode(), partial_mode="trailing-strings")
        except ValueError:
            return {"_raw": raw}
