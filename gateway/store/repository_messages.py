"""Messages: appending, loading the in-context list, and the full history."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, insert, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent.types import Message
from gateway.store.records import MESSAGE_KIND, MESSAGE_KINDS, MessageRecord
from gateway.store.repository_base import NotFoundError, RepositoryBase, rowcount, touch_session
from gateway.store.tables import MessageRow, messages_table, utcnow

MESSAGE_COLUMN_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id"})
"""Message keys stored in columns of their own; other keys go to ``extra``."""


class MessageQueries(RepositoryBase):
    """Appending messages to a session's context and reading them back."""

    async def append_messages(
        self,
        session_id: int,
        messages: list[Message],
        token_counts: list[int],
        *,
        kind: str = MESSAGE_KIND,
        platform_message_id: str | None = None,
    ) -> list[int]:
        """Store ``messages`` at the end of the session's context; returns their ids in order.

        ``token_counts[i]`` is the stored count of ``messages[i]``. ``platform_message_id``, when
        given, is recorded on every appended message. One short transaction, one bulk insert.
        """
        if len(messages) != len(token_counts):
            raise ValueError(f"{len(messages)} messages but {len(token_counts)} token counts")
        if kind not in MESSAGE_KINDS:
            raise ValueError(f"unknown message kind {kind!r}; expected one of {MESSAGE_KINDS}")
        if not messages:
            return []
        now = utcnow()
        if len(messages) == 1:
            return [
                await self._append_one(
                    session_id, messages[0], token_counts[0], kind, now, platform_message_id
                )
            ]
        async with self._writing() as session:
            first_pos = await _next_ctx_pos(session, session_id)
            rows = [
                message_row_values(
                    session_id,
                    message,
                    tokens,
                    kind=kind,
                    ctx_pos=first_pos + offset,
                    created_at=now,
                    platform_message_id=platform_message_id,
                )
                for offset, (message, tokens) in enumerate(zip(messages, token_counts, strict=True))
            ]
            await touch_session(session, session_id, updated_at=now)
            return await insert_in_context(session, session_id, rows)

    async def _append_one(
        self,
        session_id: int,
        message: Message,
        tokens: int,
        kind: str,
        now: datetime,
        platform_message_id: str | None,
    ) -> int:
        """The common case (one message a time, every turn): one INSERT ... RETURNING whose
        context position is computed in the same statement, plus the session's timestamp."""
        next_pos = (
            select(func.coalesce(func.max(MessageRow.ctx_pos) + 1, 0))
            .where(MessageRow.session_id == session_id, MessageRow.in_context == true())
            .scalar_subquery()
        )
        values = message_row_values(
            session_id,
            message,
            tokens,
            kind=kind,
            ctx_pos=0,
            created_at=now,
            platform_message_id=platform_message_id,
        )
        values["ctx_pos"] = next_pos
        async with self._writing() as session:
            connection = await session.connection()
            row_id = await connection.scalar(
                insert(messages_table).values(values).returning(messages_table.c.id)
            )
            await touch_session(session, session_id, updated_at=now)
        return int(row_id)

    async def load_context(self, session_id: int) -> list[Message]:
        """The session's in-context messages in context order, each with ``_id``/``_tokens``."""
        query = (
            select(messages_table)
            .where(MessageRow.session_id == session_id, MessageRow.in_context == true())
            .order_by(MessageRow.ctx_pos)
        )
        async with self._reading() as session:
            result = await session.execute(query)
            return [message_record(row).as_message() for row in result]

    async def all_messages(self, session_id: int) -> list[MessageRecord]:
        """Every message ever stored for the session, in order of storage."""
        query = (
            select(messages_table)
            .where(MessageRow.session_id == session_id)
            .order_by(MessageRow.id)
        )
        async with self._reading() as session:
            result = await session.execute(query)
            return [message_record(row) for row in result]

    async def count_messages(self, session_id: int) -> int:
        """How many messages the session has stored, in context or not."""
        query = select(func.count(MessageRow.id)).where(MessageRow.session_id == session_id)
        async with self._reading() as session:
            return (await session.scalar(query)) or 0

    async def set_platform_message_id(self, message_id: int, platform_message_id: str) -> None:
        """Remember the platform's id of a sent message (e.g. the Telegram message id)."""
        async with self._writing() as session:
            result = await session.execute(
                update(MessageRow)
                .where(MessageRow.id == message_id)
                .values(platform_message_id=platform_message_id)
            )
            if rowcount(result) == 0:
                raise NotFoundError(f"message {message_id} does not exist")


def message_row_values(
    session_id: int,
    message: Message,
    token_count: int,
    *,
    kind: str,
    ctx_pos: int,
    created_at: datetime,
    platform_message_id: str | None = None,
) -> dict[str, Any]:
    """The column values of an in-context row for ``message``.

    Keys starting with ``_`` are bookkeeping and are not stored; other unknown keys (``name``,
    ``reasoning``...) are kept in ``extra``.
    """
    extra = {
        name: value
        for name, value in message.items()
        if name not in MESSAGE_COLUMN_KEYS and not name.startswith("_")
    }
    return {
        "session_id": session_id,
        "role": message["role"],
        "content": message.get("content"),
        "tool_calls": message.get("tool_calls"),
        "tool_call_id": message.get("tool_call_id"),
        "extra": extra or None,
        "token_count": token_count,
        "in_context": True,
        "ctx_pos": ctx_pos,
        "kind": kind,
        "created_at": created_at,
        "platform_message_id": platform_message_id,
    }


async def insert_in_context(
    session: AsyncSession, session_id: int, rows: Sequence[dict[str, Any]]
) -> list[int]:
    """Bulk-insert in-context rows and return their ids in the order of ``rows``.

    SQLite cannot return the ids of an executemany in order, so they are read back by context
    position instead: the caller guarantees that no other in-context row of the session holds
    a position at or after the smallest position in ``rows``.
    """
    if not rows:
        return []
    # Core executemany on the session's connection: the fast path, no ORM bookkeeping per row.
    connection = await session.connection()
    await connection.execute(insert(messages_table), list(rows))
    positions = [row["ctx_pos"] for row in rows]
    result = await connection.execute(
        select(MessageRow.ctx_pos, MessageRow.id).where(
            MessageRow.session_id == session_id,
            MessageRow.in_context == true(),
            MessageRow.ctx_pos >= min(positions),
        )
    )
    id_at_position = {position: message_id for position, message_id in result}
    if len(id_at_position) != len(rows):
        raise RuntimeError(
            f"expected {len(rows)} new in-context rows for session {session_id}, "
            f"found {len(id_at_position)}"
        )
    return [id_at_position[position] for position in positions]


async def _next_ctx_pos(session: AsyncSession, session_id: int) -> int:
    last = await session.scalar(
        select(func.max(MessageRow.ctx_pos)).where(
            MessageRow.session_id == session_id, MessageRow.in_context == true()
        )
    )
    return 0 if last is None else last + 1


def message_record(row: Row[Any]) -> MessageRecord:
    """The immutable view of a row of ``select(messages_table)``.

    Messages are read as Core rows, not ORM objects: contexts and exports can be long.
    """
    return MessageRecord(**row._asdict())
