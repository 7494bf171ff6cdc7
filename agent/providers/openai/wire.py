"""A session's chat-completions request body kept across turns: only new messages are encoded.

Chat-completions messages go out one for one (see
:func:`to_openai_message`), so each message's encoded JSON is
kept and a call re-encodes from the first message that changed: new ones and those whose cache
marks moved. The same rules as :mod:`agent.providers.anthropic.wire` decide what changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent.attachments import ATTACHMENT_KEY, attachment_of, sendable_part
from agent.providers.history_changes import first_changed, spot_check_positions
from agent.providers.wire_body import EncodedRun, WireBody, dumps_json, object_head
from agent.types import Message, content_text, without_bookkeeping


def _wire_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        return call
    return {**call, "function": {**function, "arguments": json.dumps(arguments or {})}}


def _wire_part(part: Any) -> Any:
    """A content part as chat-completions takes it: a PDF document block becomes a ``file``
    part (base64 data URL); our attachment reference stays home."""
    part = sendable_part(part)
    if not isinstance(part, dict) or ATTACHMENT_KEY not in part:
        return part
    wire = {key: value for key, value in part.items() if key != ATTACHMENT_KEY}
    if wire.get("type") == "document" and isinstance(wire.get("source"), dict):
        source = wire.pop("source")
        ref = attachment_of(part)
        data_url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        name = (ref.file_name if ref else None) or "document.pdf"
        wire.update({"type": "file", "file": {"filename": name, "file_data": data_url}})
    return wire


def to_openai_message(message: Message) -> Message:
    """A history message as it goes on the wire: no bookkeeping keys, arguments as JSON text,
    attachment parts in chat-completions form; a tool result as text (chat-completions tool
    messages take no images: an image reads as its placeholder)."""
    wire = without_bookkeeping(message)
    wire.pop("is_error", None)  # chat-completions tool messages have no error flag
    content = wire.get("content")
    if wire.get("role") == "tool" and isinstance(content, list):
        wire["content"] = content_text(content)
    elif isinstance(content, list):
        wire["content"] = [_wire_part(part) for part in content]
    if wire.get("tool_calls"):
        wire["tool_calls"] = [_wire_tool_call(call) for call in wire["tool_calls"]]
    return wire


def full_openai_body(messages: list[Message], head: dict[str, Any]) -> bytes:
    """``head`` (model, token limit, tools ...) and ``messages`` encoded in one go."""
    encoded = dumps_json([to_openai_message(m) for m in messages])
    return object_head(head, "messages") + encoded + b"}"


class OpenAIWireHistory:
    """One session's encoded messages; :meth:`body` gives each call's request body."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next body is encoded from scratch."""
        self._encoded = EncodedRun()
        self._sources: list[Message] = []
        self._marked: dict[int, Message] = {}
        self.converted_messages = 0
        """Messages encoded since the last reset."""

    def body(
        self, history: Sequence[Message], marked: Mapping[int, Message], head: dict[str, Any]
    ) -> WireBody:
        """The body for ``history`` with ``marked`` overlaid; equal to :func:`full_openai_body`."""
        first = first_changed(history, marked, len(self._sources), self._marked)
        if any(history[i] is not self._sources[i] for i in spot_check_positions(first)):
            first = 0
        keep = self._encoded.truncate(first)
        del self._sources[keep:]
        for index in range(keep, len(history)):
            source = history[index]
            message = marked.get(index)
            self._encoded.append(
                dumps_json(to_openai_message(source if message is None else message))
            )
            self._sources.append(source)
            self.converted_messages += 1
        self._marked = dict(marked)
        return WireBody([object_head(head, "messages"), b"[", *self._encoded.pieces(), b"]}"])
