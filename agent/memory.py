"""Long-term memory: short entries kept for one user (or one group chat) across sessions.

The host stores them (:class:`MemoryStore`, implemented by the gateway's store); the agent reads
them into the system prompt only when the prompt cache is cold anyway, and edits them through
the ``memory`` tool. An owner is one person on one platform, or one group chat: a group's prompt
never holds anyone's personal memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

MemoryScope = Literal["user", "chat"]

MEMORY_HEADING = "What you remember (your long-term memory; edit it with the memory tool):"
"""The line that opens the memory block of the system prompt."""


@dataclass(frozen=True, slots=True)
class MemoryOwner:
    """Whose memory: a user (private chats) or a group chat (``scope="chat"``)."""

    scope: MemoryScope
    platform: str
    owner_id: str

    @classmethod
    def for_chat(
        cls, platform: str, chat_id: str, user_id: str | None, *, is_group: bool
    ) -> MemoryOwner | None:
        """The owner a session's memory belongs to: the chat in a group, else the user
        (None when the session has no user, e.g. a terminal chat)."""
        if is_group:
            return cls("chat", platform, chat_id)
        return cls("user", platform, user_id) if user_id else None


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One remembered fact, as stored."""

    id: int
    text: str
    created_at: datetime
    updated_at: datetime


class MemoryStore(Protocol):
    """Where memory entries live; every call is for one owner, and sees only theirs."""

    async def list_memories(self, owner: MemoryOwner) -> list[MemoryEntry]:
        """The owner's entries, oldest first."""

    async def add_memory(self, owner: MemoryOwner, text: str) -> MemoryEntry:
        """Store a new entry for the owner."""

    async def replace_memory(self, owner: MemoryOwner, entry_id: int, text: str) -> MemoryEntry:
        """Change the text of one of the owner's entries (``LookupError`` if it is not theirs)."""

    async def remove_memory(self, owner: MemoryOwner, entry_id: int) -> None:
        """Delete one of the owner's entries (``LookupError`` if it is not theirs)."""


def memory_block(entries: list[MemoryEntry]) -> str:
    """The memory as the system prompt shows it ("" when there is none)."""
    if not entries:
        return ""
    lines = "\n".join(f"- {entry.text}" for entry in entries)
    return f"{MEMORY_HEADING}\n{lines}"


def with_memory(system_prompt: str, entries: list[MemoryEntry]) -> str:
    """The configured system prompt followed by the memory block, if any."""
    block = memory_block(entries)
    return f"{system_prompt}\n\n{block}" if block else system_prompt


def used_chars(entries: list[MemoryEntry]) -> int:
    """How much of the owner's memory budget the entries take (their text lengths)."""
    return sum(len(entry.text) for entry in entries)


def _comparable(text: str) -> str:
    """A fact as compared for duplicates: case, spacing and a final full stop ignored."""
    return " ".join(text.casefold().split()).rstrip(".!")


def new_facts(entries: list[MemoryEntry], facts: list[str], max_chars: int) -> list[str]:
    """Of ``facts``, those to add to ``entries``: not already there (nor within an entry), each
    once, in order, while they fit ``max_chars`` in all (a fact that does not fit is left out)."""
    known = [_comparable(entry.text) for entry in entries]
    room = max_chars - used_chars(entries)
    chosen: list[str] = []
    for fact in facts:
        text = " ".join(fact.split())
        key = _comparable(text)
        if not key or any(key == seen or key in seen for seen in known) or len(text) > room:
            continue
        chosen.append(text)
        known.append(key)
        room -= len(text)
    return chosen


async def merge_facts(
    store: MemoryStore, owner: MemoryOwner, facts: list[str], max_chars: int
) -> list[MemoryEntry]:
    """Add the durable facts of a compaction to ``owner``'s memory without duplicates, within
    ``max_chars``; returns the entries added."""
    if not facts:
        return []
    chosen = new_facts(await store.list_memories(owner), facts, max_chars)
    return [await store.add_memory(owner, text) for text in chosen]
