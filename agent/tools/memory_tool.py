"""The ``memory`` tool: the model adds, replaces and removes entries of its long-term memory.

The memory is the session owner's (:class:`agent.memory.MemoryOwner`: the user in a private
chat, the group in a group chat). The tool's result carries the entry as it now reads, so the
model knows it at once; the system prompt shows the memory only from the next cold point on.
"""

from __future__ import annotations

from typing import Any

from agent.memory import MemoryEntry, MemoryOwner, MemoryStore, used_chars
from agent.tools.registry import Tool, ToolError

MEMORY_TOOL_NAME = "memory"

_DESCRIPTIONS = {
    "user": "the person you are talking with (private to them)",
    "chat": "this group chat (shared by its members; keep nobody's private facts here)",
}


def memory_tool(store: MemoryStore, owner: MemoryOwner, max_chars: int) -> Tool:
    """The tool writing ``owner``'s memory, bounded to ``max_chars`` characters in all."""

    async def handle(args: dict[str, Any]) -> str:
        action = str(args.get("action") or "")
        entries = await store.list_memories(owner)
        if action == "add":
            text = _content(args)
            _check_room(entries, len(text), max_chars)
            entry = await store.add_memory(owner, text)
            return _done("Remembered", entry, [*entries, entry], max_chars)
        old = _find(entries, str(args.get("old_text") or ""))
        if action == "replace":
            text = _content(args)
            _check_room(entries, len(text) - len(old.text), max_chars)
            entry = await store.replace_memory(owner, old.id, text)
            after = [entry if e.id == old.id else e for e in entries]
            return _done("Memory entry replaced; it now reads", entry, after, max_chars)
        if action == "remove":
            await store.remove_memory(owner, old.id)
            after = [e for e in entries if e.id != old.id]
            return _done("Removed from memory", old, after, max_chars)
        raise ToolError("'action' must be one of add, replace, remove")

    return Tool(
        MEMORY_TOOL_NAME,
        f"Your long-term memory of {_DESCRIPTIONS[owner.scope]}, kept across sessions. Save "
        "durable facts worth knowing next time (names, preferences, standing instructions), "
        "one short entry each. action=add with content; action=replace with old_text (a "
        "unique part of the entry) and content; action=remove with old_text. "
        f"At most {max_chars} characters in all.",
        {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["add", "replace", "remove"]},
                "content": {"type": "string", "description": "The entry's new text."},
                "old_text": {
                    "type": "string",
                    "description": "A part of the entry to replace or remove that no other has.",
                },
            },
            "required": ["action"],
        },
        handle,
    )


def _content(args: dict[str, Any]) -> str:
    text = " ".join(str(args.get("content") or "").split())
    if not text:
        raise ToolError("missing 'content' (the entry's text)")
    return text


def _find(entries: list[MemoryEntry], old_text: str) -> MemoryEntry:
    """The one entry containing ``old_text``; a clear error when none or several do."""
    if not old_text.strip():
        raise ToolError("missing 'old_text' (a part of the entry to change)")
    matches = [entry for entry in entries if old_text.strip() in entry.text]
    if not matches:
        raise ToolError(f"no memory entry contains {old_text!r}")
    if len(matches) > 1:
        raise ToolError(f"{len(matches)} memory entries contain {old_text!r}; quote more of one")
    return matches[0]


def _check_room(entries: list[MemoryEntry], growth: int, max_chars: int) -> None:
    used = used_chars(entries)
    if used + growth > max_chars:
        raise ToolError(
            f"memory is full: {used} of {max_chars} characters used, and this needs {growth} "
            "more. Replace or remove entries that matter less first, or shorten this one."
        )


def _done(what: str, entry: MemoryEntry, after: list[MemoryEntry], max_chars: int) -> str:
    return (
        f'{what}: "{entry.text}" (memory: {len(after)} entries, '
        f"{used_chars(after)} of {max_chars} characters used)"
    )
