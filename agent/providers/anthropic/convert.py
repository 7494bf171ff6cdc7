"""Chat-completions messages to the Anthropic Messages wire format (pure functions).

The agent keeps its history in the chat-completions shape; Anthropic wants a separate ``system``,
strictly alternating user/assistant turns, ``tool_use`` blocks answered by ``tool_result`` blocks
at the start of the very next user turn, and no empty text. This module turns any history the
agent can hold into a request the API accepts, keeping every ``cache_control`` marker. The
answer comes back through :mod:`agent.providers.anthropic.response`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from agent.attachments import ATTACHMENT_KEY, sendable_part
from agent.types import Message

Block = dict[str, Any]

EMPTY_PLACEHOLDER = "(empty)"
"""Text given to a message that would otherwise have no content (the API refuses empty turns)."""
CONTINUES_PLACEHOLDER = "(conversation continues)"
"""Opening user turn added when a history does not start with the user (the API requires it)."""
MISSING_RESULT_TEXT = "(no result: the tool call was interrupted)"
"""Result given to a tool call whose result is missing, so the request stays valid."""

_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_DATA_URL = re.compile(r"^data:(?P<media>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)$", re.DOTALL)


_NOT_WIRE = frozenset({"cache_control", ATTACHMENT_KEY})
"""Part keys that are not block fields (the marker is re-added below; the reference is ours)."""


# ---------------------------------------------------------------- content parts to blocks


def _image_block(part: dict[str, Any]) -> Block | None:
    """An OpenAI ``image_url`` part as an Anthropic image block (base64 for data URLs)."""
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url:
        return None
    found = _DATA_URL.match(url)
    if found:
        source = {"type": "base64", "media_type": found["media"], "data": found["data"]}
    else:
        source = {"type": "url", "url": url}
    return {"type": "image", "source": source}


def _part_to_block(part: Any) -> Block | None:
    """One content part as a block, or None when it is blank text (the API refuses those)."""
    part = sendable_part(part)
    if isinstance(part, str):
        part = {"type": "text", "text": part}
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "text":
        text = str(part.get("text") or "")
        block: Block | None = {"type": "text", "text": text} if text.strip() else None
    elif kind == "image_url":
        block = _image_block(part)
    else:
        # Already an Anthropic block (image, document ...): pass it on, minus bookkeeping keys.
        block = {k: v for k, v in part.items() if k not in _NOT_WIRE and not k.startswith("_")}
    if block is not None and "cache_control" in part:
        block["cache_control"] = part["cache_control"]
    return block


def _content_blocks(content: Any) -> list[Block]:
    """Blocks of a message's content (str, list of parts, or None); blank text dropped."""
    if content is None:
        return []
    parts = [content] if isinstance(content, str) else list(content)
    return [block for part in parts if (block := _part_to_block(part)) is not None]


def _parse_arguments(arguments: Any) -> dict[str, Any]:
    """Tool-call arguments as the object ``tool_use.input`` needs; bad JSON kept as ``_raw``."""
    if isinstance(arguments, dict):
        return arguments
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    try:
        parsed = json.loads(arguments)
    except (TypeError, ValueError):
        return {"_raw": str(arguments)}
    return parsed if isinstance(parsed, dict) else {"_raw": str(arguments)}


def _tool_use_blocks(tool_calls: list[dict[str, Any]]) -> list[Block]:
    blocks = []
    for call in tool_calls:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id") or "",
                "name": function.get("name") or "",
                "input": _parse_arguments(function.get("arguments")),
            }
        )
    return blocks


def _tool_result_block(message: Message) -> Block:
    content = message.get("content")
    result: Any
    if isinstance(content, list):
        result = _content_blocks(content) or EMPTY_PLACEHOLDER
    else:
        result = str(content) if content is not None and str(content).strip() else EMPTY_PLACEHOLDER
    block: Block = {
        "type": "tool_result",
        "tool_use_id": message.get("tool_call_id") or "",
        "content": result,
    }
    if message.get("is_error"):
        block["is_error"] = True
    return block


def message_turn(message: Message) -> tuple[str, list[Block]]:
    """One non-system message as (role, blocks), a top-level marker moved onto its last block."""
    role = message.get("role")
    if role == "tool":
        blocks = [_tool_result_block(message)]
        role = "user"
    else:
        blocks = _content_blocks(message.get("content"))
        if role == "assistant":
            blocks += _tool_use_blocks(message.get("tool_calls") or [])
        role = "assistant" if role == "assistant" else "user"
    if not blocks:
        blocks = [{"type": "text", "text": EMPTY_PLACEHOLDER}]
    if "cache_control" in message:
        blocks[-1] = {**blocks[-1], "cache_control": message["cache_control"]}
    return role, blocks


# ---------------------------------------------------------------- turn structure


def _merge_turns(turns: list[tuple[str, list[Block]]]) -> list[dict[str, Any]]:
    """Consecutive same-role turns joined into one message, as the API requires."""
    merged: list[dict[str, Any]] = []
    for role, blocks in turns:
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": list(blocks)})
    return merged


def _result_as_text(block: Block) -> Block:
    """A tool_result that answers no tool_use of the previous turn, kept as plain text."""
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    text = f"[tool result {block.get('tool_use_id', '')}]\n{content}"
    converted: Block = {"type": "text", "text": text}
    if "cache_control" in block:
        converted["cache_control"] = block["cache_control"]
    return converted


def _wire_tool_id(original: str, taken: set[str]) -> str:
    """A tool_use id the API accepts (``[A-Za-z0-9_-]+``, unique in the request).

    Ids from other providers can repeat (some local servers number calls ``call_0`` every turn)
    or hold other characters; the API refuses both.
    """
    base = _UNSAFE_ID_CHARS.sub("_", original) or "toolu_unnamed"
    wire, suffix = base, 1
    while wire in taken:
        suffix += 1
        wire = f"{base}_{suffix}"
    taken.add(wire)
    return wire


def assign_wire_ids(assistant: dict[str, Any], taken: set[str]) -> list[tuple[str, str]]:
    """Give the turn's tool_use blocks wire ids; returns (original id, wire id) per call."""
    calls: list[tuple[str, str]] = []
    content = []
    for block in assistant["content"]:
        if block.get("type") == "tool_use":
            wire = _wire_tool_id(str(block.get("id") or ""), taken)
            calls.append((str(block.get("id") or ""), wire))
            block = {**block, "id": wire}
        content.append(block)
    assistant["content"] = content
    return calls


def pair_user_turn(user: dict[str, Any], open_calls: list[tuple[str, str]]) -> None:
    """Make ``user`` answer exactly ``open_calls``: results first, strays as text, gaps filled."""
    unanswered = list(open_calls)
    results: list[Block] = []
    others: list[Block] = []
    for block in user["content"]:
        if block.get("type") != "tool_result":
            others.append(block)
            continue
        match = next((c for c in unanswered if c[0] == block.get("tool_use_id")), None)
        if match is None:
            others.append(_result_as_text(block))
        else:
            unanswered.remove(match)
            results.append({**block, "tool_use_id": match[1]})
    missing = [
        {
            "type": "tool_result",
            "tool_use_id": wire,
            "content": MISSING_RESULT_TEXT,
            "is_error": True,
        }
        for _, wire in unanswered
    ]
    user["content"] = missing + results + others


def _pair_tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool_use answered in the next user turn, every tool_result answering one."""
    paired: list[dict[str, Any]] = []
    taken: set[str] = set()
    open_calls: list[tuple[str, str]] = []
    for message in messages:
        # Turns alternate after merging, so every assistant turn follows a user turn.
        if message["role"] == "user":
            pair_user_turn(message, open_calls)
            open_calls = []
        else:
            open_calls = assign_wire_ids(message, taken)
        paired.append(message)
    if open_calls:
        paired.append({"role": "user", "content": []})
        pair_user_turn(paired[-1], open_calls)
    return paired


def _use_as_text(block: Block) -> Block:
    """A tool_use block as plain text, for a request that offers no tools."""
    arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
    converted: Block = {"type": "text", "text": f"[tool call {block.get('name')} {arguments}]"}
    if "cache_control" in block:
        converted["cache_control"] = block["cache_control"]
    return converted


def _tool_blocks_as_text(messages: list[dict[str, Any]], offered: set[str]) -> list[dict[str, Any]]:
    """Calls of tools not offered in this request (and their results) turned into text.

    The API refuses a tool_use whose tool is not defined: a request with no tools, or a history
    from an engine or tool set that is no longer active, must still be accepted.
    """
    stale = {
        b.get("id")
        for m in messages
        for b in m["content"]
        if b.get("type") == "tool_use" and b.get("name") not in offered
    }
    if not stale:
        return messages

    for message in messages:
        message["content"] = stale_blocks_as_text(message["content"], stale)
    return messages


def stale_blocks_as_text(blocks: list[Block], stale: Collection[Any]) -> list[Block]:
    """``blocks`` with the calls whose ids are in ``stale``, and their results, as text."""
    converted = []
    for block in blocks:
        if block.get("type") == "tool_use" and block.get("id") in stale:
            block = _use_as_text(block)
        elif block.get("type") == "tool_result" and block.get("tool_use_id") in stale:
            block = _result_as_text(block)
        converted.append(block)
    return converted


def stale_call_ids(assistant: dict[str, Any], offered: Collection[str]) -> set[Any]:
    """Ids of the turn's tool calls whose tool is not in ``offered``."""
    return {
        b.get("id")
        for b in assistant["content"]
        if b.get("type") == "tool_use" and b.get("name") not in offered
    }


def _finish_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Start with a user turn; a final assistant turn (a prefill) may not end in whitespace."""
    if not messages or messages[0]["role"] != "user":
        messages.insert(
            0, {"role": "user", "content": [{"type": "text", "text": CONTINUES_PLACEHOLDER}]}
        )
    strip_prefill(messages[-1])
    return messages


def strip_prefill(last: dict[str, Any]) -> None:
    """A final assistant turn (a prefill) may not end in whitespace: strip its last text."""
    if last["role"] == "assistant" and last["content"][-1].get("type") == "text":
        block = last["content"][-1]
        last["content"][-1] = {**block, "text": block["text"].rstrip() or EMPTY_PLACEHOLDER}


def system_blocks(messages: list[Message]) -> list[Block]:
    blocks: list[Block] = []
    for message in messages:
        own = [b for b in _content_blocks(message.get("content")) if b.get("type") == "text"]
        if own and "cache_control" in message:
            own[-1] = {**own[-1], "cache_control": message["cache_control"]}
        blocks.extend(own)
    return blocks


def tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool schema in Anthropic form; an OpenAI ``{"type": "function"}`` schema is accepted."""
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        function = tool["function"]
        tool = {
            "name": function.get("name"),
            "description": function.get("description", ""),
            "input_schema": function.get("parameters"),
        }
    schema = {k: v for k, v in tool.items() if not k.startswith("_")}
    if not schema.get("input_schema"):
        schema["input_schema"] = {"type": "object", "properties": {}}
    return schema


def to_anthropic_request(
    messages: list[Message], tools: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """``{"system": [...], "messages": [...], "tools": [...]}`` for the Messages API.

    Never mutates ``messages``. Keys starting with ``_`` are dropped; ``cache_control`` markers
    (on parts, or top-level on a message) are kept on the matching block. Calls of tools not
    in ``tools`` (none offered, or a tool set that changed) and their results are sent as text.
    """
    system = [m for m in messages if m.get("role") == "system"]
    turns = [message_turn(m) for m in messages if m.get("role") != "system"]
    wire = _pair_tool_results(_merge_turns(turns))
    schemas = [tool_schema(t) for t in tools or []]
    wire = _tool_blocks_as_text(wire, {str(t.get("name")) for t in schemas})
    wire = _finish_turns(wire)
    return {
        "system": system_blocks(system),
        "messages": wire,
        "tools": schemas,
    }


# ---------------------------------------------------------------- response
