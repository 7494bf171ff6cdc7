"""Recall: the full-text search over an owner's earlier sessions, limited to what they may see.

A person sees the chats they have written in on that platform (an inbound message of theirs
there makes them a member): their private chats and the groups they are in, never another
person's private chat. A group chat sees its own sessions only, so recall in a group never quotes
anyone's private conversation. Only what was said is quoted: a message's text, not its tool calls
(an earlier ``recall`` call would otherwise find itself). The search itself is the store's message
search (:meth:`gateway.store.archive.StoreArchive.search_messages`), the same on SQLite and
PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Select, select

from agent.engines.message_archive import MessageHit
from agent.memory import MemoryOwner
from agent.recall import RecallHit, says_any_word
from agent.types import content_text
from gateway.store.archive import StoreArchive
from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import InboundRow, MessageRow, SessionRow

RECALLED_ROLES = frozenset({"user", "assistant"})
"""What recall quotes: what people and the bot said (tool results are not conversation)."""


def visible_sessions(owner: MemoryOwner) -> Select[int]:
    """The ids of the sessions ``owner`` may recall from (see the module's docstring)."""
    query = select(SessionRow.id).where(SessionRow.platform == owner.platform)
    if owner.scope == "chat":
        return query.where(SessionRow.chat_id == owner.owner_id)
    member_of = select(InboundRow.chat_id).where(
        InboundRow.platform == owner.platform, InboundRow.user_id == owner.owner_id
    )
    return query.where(SessionRow.chat_id.in_(member_of))


def _skipping(in_context: set[int]) -> Callable[[MessageHit], bool]:
    """Leave out tool results and what the model has in context already."""
    return lambda hit: hit.role not in RECALLED_ROLES or hit.id in in_context


class RecallQueries(RepositoryBase):
    """Searching the earlier sessions an owner may see."""

    async def recall_messages(
        self, owner: MemoryOwner, query: str, limit: int, *, current_session: int | None = None
    ) -> list[RecallHit]:
        """Said user and assistant messages matching ``query`` in the sessions ``owner`` may
        see, best first (at most ``limit``), leaving out the context of ``current_session``."""
        in_context_query = select(MessageRow.id).where(
            MessageRow.session_id == current_session, MessageRow.in_context.is_(True)
        )
        async with self._reading() as session:
            session_ids = list((await session.scalars(visible_sessions(owner))).all())
            in_context = set((await session.scalars(in_context_query)).all())
        if not session_ids:
            return []
        archive = StoreArchive(self._store)
        # What is skipped counts against the search's limit: ask for room to spare.
        hits = await archive.search_messages(
            query, session_ids, limit * 3 + len(in_context), skip=_skipping(in_context)
        )
        said = {
            m.id: content_text(m.message.get("content"))
            for m in await archive.messages_by_id([hit.id for hit in hits])
        }
        hits = [hit for hit in hits if says_any_word(said.get(hit.id, ""), query)][:limit]
        if not hits:
            return []
        started_query = select(SessionRow.id, SessionRow.created_at).where(
            SessionRow.id.in_({hit.session_id for hit in hits})
        )
        async with self._reading() as session:
            started = {row.id: row.created_at for row in await session.execute(started_query)}
        return [
            RecallHit(
                hit.session_id,
                started[hit.session_id],
                hit.id,
                hit.role,
                hit.created_at,
                said[hit.id],
            )
            for hit in hits
        ]
