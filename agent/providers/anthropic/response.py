"""An Anthropic Messages response (the SDK's object) as the agent's :class:`ModelResponse`."""

from __future__ import annotations

import json
from typing import Any

from agent.types import Message, ModelResponse, Usage


def _field(obj: Any, name: str, default: Any = None) -> Any:
    """Read ``name`` from an SDK model or a plain dict alike."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def usage_from_anthropic(usage: Any, model: str = "") -> Usage:
    """Anthropic usage normalised: ``cache_write`` includes its 1-hour part, listed apart."""
    creation = _field(usage, "cache_creation")
    return Usage(
        input_tokens=int(_field(usage, "input_tokens") or 0),
        output_tokens=int(_field(usage, "output_tokens") or 0),
        cache_read_tokens=int(_field(usage, "cache_read_input_tokens") or 0),
        cache_write_tokens=int(_field(usage, "cache_creation_input_tokens") or 0),
        cache_write_1h_tokens=int(_field(creation, "ephemeral_1h_input_tokens") or 0),
        model=model,
    )


def from_anthropic_message(msg: Any) -> ModelResponse:
    """An Anthropic ``Message`` (SDK object or dict) as a chat-completions reply with usage."""
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for block in _field(msg, "content") or []:
        kind = _field(block, "type")
        if kind == "text":
            texts.append(str(_field(block, "text") or ""))
        elif kind == "tool_use":
            arguments = json.dumps(_field(block, "input") or {}, ensure_ascii=False)
            tool_calls.append(
                {
                    "id": _field(block, "id"),
                    "type": "function",
                    "function": {"name": _field(block, "name"), "arguments": arguments},
                }
            )
    text = "\n".join(t for t in texts if t)
    message: Message = {"role": "assistant", "content": text or (None if tool_calls else "")}
    if tool_calls:
        message["tool_calls"] = tool_calls
    model = str(_field(msg, "model") or "")
    return ModelResponse(
        message=message,
        usage=usage_from_anthropic(_field(msg, "usage"), model),
        stop_reason=_field(msg, "stop_reason"),
    )
