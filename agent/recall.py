"""Recall: the model searches what was said in a user's (or a group's) earlier sessions.

The host runs the search (:class:`RecallStore`, implemented by the gateway's store) and decides
what the owner may see: a person sees the chats they wrote in (their private chats, and groups
they are a member of), a group chat sees its own sessions only, so nobody's private chat is ever
quoted in a group and nobody reads another person's conversation.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agent.engines.text_search import query_words
from agent.memory import MemoryOwner

SNIPPET_CHARS = 240
"""How much of a found message a recall result quotes: enough for a sentence around the match."""


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One earlier message that matched: where and when it was said, and its text."""

    session_id: int
    session_started_at: datetime
    message_id: int
    role: str
    created_at: datetime
    text: str


class RecallStore(Protocol):
    """Where recall searches; the store decides which sessions the owner may see."""

    async def recall_messages(
        self, owner: MemoryOwner, query: str, limit: int, *, current_session: int | None = None
    ) -> list[RecallHit]:
        """Said user and assistant messages matching ``query`` in the sessions ``owner`` may
        see (a user: the chats they have written in; a group chat: its own), best first;
        messages in the context of ``current_session`` are left out (the model has them)."""


def _folded(text: str) -> str:
    """Text as full-text search compares it: case and accents ignored."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def says_any_word(text: str, query: str) -> bool:
    """Whether ``text`` itself contains a word of ``query`` (a message may match the search by
    its tool calls only, which are no conversation to quote)."""
    folded = _folded(text)
    return any(_folded(word) in folded for word in query_words(query))


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around the first word of ``query`` it contains,
    on one line, with an ellipsis where it was cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    found = [lowered.find(word.lower()) for word in query_words(query)]
    first = min((at for at in found if at >= 0), default=0)
    start = max(0, min(first - width // 3, len(flat) - width))
    cut = flat[start : start + width]
    return ("…" if start > 0 else "") + cut + ("…" if start + width < len(flat) else "")
