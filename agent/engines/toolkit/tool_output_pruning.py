"""Phase 1 of a compaction: shrink old tool outputs and attachments without calling a model.

Old tool results are usually the bulk of a long agent session and the least needed later, so
each one outside the protected tail is replaced by a one-line description (which tool, which
call, its first line and size), and an output repeated later is collapsed to a pointer to the
later copy. Old images and documents likewise become a placeholder saying what was there
(``[image: photo, 1280x960, shared 2026-12-03 09:14]``) that keeps the attachment's reference;
their captions stay. A tool result's images go too: with its cleared output, or as placeholders
when the output is kept. The originals stay in the store; a replaced message is a new dict
without ``"_id"``.

A used call's own input goes the same way when it is large (an edit's old and new text, a new
file's content): its arguments become one short object saying how to read them again, as
Anthropic's context editing clears tool inputs with ``clear_tool_inputs``. The call's id and
name stay, so every result still answers its call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent.attachments import PAYLOAD_PART_TYPES, attachment_of, placeholder_part
from agent.types import Message, ToolCall, content_text, without_bookkeeping

PRUNE_MIN_CHARS = 200
"""Tool outputs longer than this (outside the protected tail) are cleared."""
PRUNED_OUTPUT_PREFIX = "[Old tool output cleared]"
"""Start of the placeholder that replaces a cleared tool output."""
PRUNED_FIRST_LINE_CHARS = 80
"""How much of the output's first line the placeholder keeps."""
DUPLICATE_OUTPUT_TEMPLATE = "[Duplicate of a later {tool} output]"
"""Placeholder for an output that appears again, identical, later in the history."""
UNKNOWN_TOOL = "tool"
PRUNE_MIN_INPUT_CHARS = 400
"""A used call's arguments longer than this (as JSON) are cleared with its output; shorter
ones (a path, a command) say what the call was and cost less than their placeholder."""
PRUNED_INPUT_KEY = "input_cleared"
"""The only key of a cleared call's arguments."""
KEEP_RECENT_TOOL_RESULTS = 3
"""Inside a turn, clearing used outputs keeps this many newest tool results whole (the model
usually works from its last few), as Anthropic's context editing keeps its last tool uses."""


def first_clearable_in_turn(messages: Sequence[Message]) -> int | None:
    """The index of the first message of the newest turn (after its user message) that a
    clearing could still shorten (a tool output, or the assistant message whose call's input
    is large), None when there is none: where the next clearing of that turn will start
    changing the history. Reads only the newest turn."""
    start = len(messages)
    while start > 0 and messages[start - 1].get("role") != "user":
        start -= 1
    owners: dict[str, int] = {}
    for index in range(start, len(messages)):
        message = messages[index]
        role = message.get("role")
        if role == "assistant":
            owners.update(
                (str(call.get("id")), index)
                for call in message.get("tool_calls") or []
                if is_clearable_input(call)
            )
        elif role == "tool":
            owner = owners.get(str(message.get("tool_call_id")))
            if owner is not None:
                return owner
            if is_clearable_output(message.get("content")):
                return index
    return None


def is_clearable_output(content: object) -> bool:
    """Whether a tool output is one clearing could shorten: long enough and not cleared yet
    (parts count as clearable: their images and text go)."""
    if isinstance(content, str):
        return len(content) > PRUNE_MIN_CHARS and not content.startswith(PRUNED_OUTPUT_PREFIX)
    return isinstance(content, list) and bool(content)


def call_arguments_text(call: ToolCall) -> str:
    """A tool call's arguments as the JSON text the model sent."""
    arguments = (call.get("function") or {}).get("arguments")
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def is_clearable_input(call: ToolCall) -> bool:
    """Whether a tool call's input is one clearing could shorten: long, not cleared yet."""
    text = call_arguments_text(call)
    return len(text) > PRUNE_MIN_INPUT_CHARS and not text.startswith(f'{{"{PRUNED_INPUT_KEY}"')


def pruned_input(call_id: str, text: str) -> str:
    """The arguments that replace a cleared call's input (JSON: providers send an object)."""
    note = f'{len(text):,} chars; tool_output {{"call": "{call_id}", "part": "input"}} reads it'
    return json.dumps({PRUNED_INPUT_KEY: note}, ensure_ascii=False)


def used_outputs_end(messages: Sequence[Message], floor: int, keep: int) -> int:
    """Where clearing the used tool outputs of the turn starting at ``floor`` stops: before the
    ``keep`` newest tool results, and before any result the model has not seen yet (those after
    the last assistant message). ``len(messages)`` when the turn has no tool result."""
    end = len(messages)
    kept = 0
    for index in range(len(messages) - 1, floor - 1, -1):
        role = messages[index].get("role")
        if role == "assistant":
            break  # every result after it is unseen: kept, and counted among the newest
        if role == "tool":
            kept += 1
            end = index
    for index in range(end - 1, floor - 1, -1):
        if kept >= keep:
            break
        if messages[index].get("role") == "tool":
            kept += 1
            end = index
    return end


def tool_names_by_call_id(messages: Sequence[Message]) -> dict[str, str]:
    """Map each tool call id to the name of the tool it called."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            names[str(call.get("id"))] = str(function.get("name") or call.get("name") or "")
    return names


def first_line(text: str, limit: int = PRUNED_FIRST_LINE_CHARS) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped[:limit]
    return ""


def pruned_placeholder(tool: str, call_id: str, text: str) -> str:
    """The one-line stand-in for a cleared tool output (the host's ``tool_output`` tool reads
    the original again by its call id)."""
    # Short on purpose: every later rewrite of the cache writes it again. What the call was is
    # in the assistant's tool call right before it.
    return (
        f"{PRUNED_OUTPUT_PREFIX} {tool}, {len(text):,} chars; "
        f'tool_output {{"call": "{call_id}"}} reads it again'
    )


def replace_content(message: Message, content: str) -> Message:
    """A copy of ``message`` with new content and no bookkeeping keys (it becomes a new row)."""
    copy = without_bookkeeping(message)
    copy["content"] = content
    return copy


def prune_tool_outputs(
    messages: Sequence[Message],
    start: int,
    end: int,
    tool_names: dict[str, str] | None = None,
    *,
    attachments_end: int | None = None,
) -> list[Message]:
    """Return ``messages`` with tool outputs in ``[start, end)`` cleared or de-duplicated, and
    images and documents before ``attachments_end`` (default ``end``) replaced by placeholders:
    a caller clearing used outputs inside a turn keeps the turn's own request whole.

    The list keeps its length and order; untouched messages are the same dicts. An output that
    appears again later (anywhere) becomes a duplicate pointer; otherwise an output over
    ``PRUNE_MIN_CHARS`` becomes a placeholder. Placeholders are only used when shorter. The
    calls whose results lie in ``[start, end)`` lose their large inputs
    (:func:`is_clearable_input`) when their assistant message is at ``start`` or after.
    """
    names = tool_names if tool_names is not None else tool_names_by_call_id(messages)
    last_seen: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            last_seen[content_text(message.get("content"))] = index
    pruned = list(messages)
    # Attachments (a user's photos, a tool result's images) are pruned in the protected head
    # too: their text stays, the bytes go.
    bytes_end = end if attachments_end is None else min(end, attachments_end)
    for index in range(0, min(end, len(messages))):
        message = messages[index]
        cleared = None
        if message.get("role") == "tool" and index >= start:
            cleared = _cleared_output(message, names, last_seen, index)
        if cleared is not None:
            pruned[index] = replace_content(message, cleared)
        elif index < bytes_end and (without := without_attachments(message)) is not None:
            pruned[index] = without
    _clear_used_inputs(pruned, start, end)
    return pruned


def _clear_used_inputs(messages: list[Message], start: int, end: int) -> None:
    """Clear, in place, the large inputs of the calls whose results lie in ``[start, end)``."""
    used = {
        str(messages[index].get("tool_call_id"))
        for index in range(max(0, start), min(end, len(messages)))
        if messages[index].get("role") == "tool"
    }
    if not used:
        return
    for index in range(max(0, start), min(end, len(messages))):
        message = messages[index]
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        replaced = [
            _cleared_call(call)
            if str(call.get("id")) in used and is_clearable_input(call)
            else call
            for call in calls
        ]
        if any(new is not old for new, old in zip(replaced, calls, strict=True)):
            copy = without_bookkeeping(message)
            copy["tool_calls"] = replaced
            messages[index] = copy


def _cleared_call(call: ToolCall) -> ToolCall:
    """A copy of ``call`` whose arguments say where the cleared input is."""
    function = dict(call.get("function") or {})
    function["arguments"] = pruned_input(str(call.get("id")), call_arguments_text(call))
    return {**call, "function": function}


def _cleared_output(
    message: Message, names: dict[str, str], last_seen: dict[str, int], index: int
) -> str | None:
    """The stand-in for an old tool output, None when it is kept (short, or shorter as it is)."""
    text = content_text(message.get("content"))
    call_id = str(message.get("tool_call_id"))
    tool = names.get(call_id) or UNKNOWN_TOOL
    if text and last_seen.get(text, index) > index:
        replacement = DUPLICATE_OUTPUT_TEMPLATE.format(tool=tool)
    elif len(text) > PRUNE_MIN_CHARS:
        replacement = pruned_placeholder(tool, call_id, text)
    else:
        return None
    return replacement if len(replacement) < len(text) else None


def without_attachments(message: Message) -> Message | None:
    """A copy of ``message`` whose images and documents are placeholders (None: it has none)."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    replaced = [
        placeholder_part(ref)
        if (ref := attachment_of(part)) is not None and part.get("type") in PAYLOAD_PART_TYPES
        else part
        for part in content
    ]
    if all(new is old for new, old in zip(replaced, content, strict=True)):
        return None
    copy = without_bookkeeping(message)
    copy["content"] = replaced
    return copy
