"""Messages: appending, loading the in-context list, and the full history."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, insert, select, true, update

from agent.attachments import message_attachments, stored_content
from agent.types import BOOKKEEPING_PREFIX, Message
from gateway.store.records import MESSAGE_KIND, MESSAGE_KINDS, InboundLink, MessageRecord
from gateway.store.repository_base import NotFoundError, RepositoryBase, rowcount, touch_session
from gateway.store.repository_replies import tie_inbound
from gateway.store.tables import MessageRow, attachments_table, messages_table, utcnow

_NEXT_CTX_POS = (
    select(func.coalesce(func.max(MessageRow.ctx_pos) + 1, 0))
    .where(MessageRow.session_id == bindparam("ctx_session_id"), MessageRow.in_context == true())
    .scalar_subquery()
)
_APPEND_ONE = insert(messages_table).values(ctx_pos=_NEXT_CTX_POS).returning(messages_table.c.id)
"""One message at the end of the context, its position computed in the same statement; built
once (the other columns come from each call's parameters)."""

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
        answers: InboundLink | None = None,
    ) -> list[int]:
        """Store ``messages`` at the end of the session's context; returns their ids in order.

        ``token_counts[i]`` is the stored count of ``messages[i]``. ``platform_message_id``, when
        given, is recorded on every appended message. ``answers`` names the inbound messages
        the (first) message was made from: in the same commit they point at it and become
        ``processing``, so a restart knows their text is stored. One short transaction.
        """
        if len(messages) != len(token_counts):
            raise ValueError(f"{len(messages)} messages but {len(token_counts)} token counts")
        if kind not in MESSAGE_KINDS:
            raise ValueError(f"unknown message kind {kind!r}; expected one of {MESSAGE_KINDS}")
        if not messages:
            return []
        now = utcnow()
        rows = [
            message_row_values(
                session_id,
                message,
                tokens,
                kind=kind,
                ctx_pos=0,
                created_at=now,
                platform_message_id=platform_message_id,
            )
            for message, tokens in zip(messages, token_counts, strict=True)
        ]
        if len(rows) == 1:
            return [await self._append_one(session_id, rows[0], now, answers, messages[0])]

        def insert_at_end(connection: Connection) -> list[int]:
            first_pos = _next_ctx_pos(connection, session_id)
            positioned = [{**row, "ctx_pos": first_pos + offset} for offset, row in enumerate(rows)]
            touch_session(connection, session_id, updated_at=now)
            ids = insert_in_context(connection, session_id, positioned)
            _link_inbound(connection, answers, ids[0], now)
            insert_attachments(connection, ids, messages)
            return ids

        return await self._write(insert_at_end)

    async def _append_one(
        self,
        session_id: int,
        row: dict[str, Any],
        now: datetime,
        answers: InboundLink | None,
        message: Message,
    ) -> int:
        """The common case (one message a time, every turn): one INSERT ... RETURNING whose
        context position is computed in the same statement, plus the session's timestamp."""
        values = {key: value for key, value in row.items() if key != "ctx_pos"}
        values["ctx_session_id"] = session_id

        def insert_at_end(connection: Connection) -> int:
            row_id = int(connection.execute(_APPEND_ONE, values).scalar_one())
            touch_session(connection, session_id, updated_at=now)
            _link_inbound(connection, answers, row_id, now)
            insert_attachments(connection, [row_id], [message])
            return row_id

        return await self._write(insert_at_end)

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

    async def user_message_times(self, session_id: int) -> list[float]:
        """The platform times of the session's user messages (those that have one), in order
        of storage: the visit history the context policy learns from."""
        query = (
            select(MessageRow.sent_at)
            .where(
                MessageRow.session_id == session_id,
                MessageRow.role == "user",
                MessageRow.kind == MESSAGE_KIND,
                MessageRow.sent_at.is_not(None),
            )
            .order_by(MessageRow.id)
        )
        async with self._reading() as session:
            return [float(t) for t in (await session.scalars(query)).all() if t is not None]

    async def count_messages(self, session_id: int) -> int:
        """How many messages the session has stored, in context or not."""
        query = select(func.count(MessageRow.id)).where(MessageRow.session_id == session_id)
        async with self._reading() as session:
            return (await session.scalar(query)) or 0

    async def set_platform_message_id(self, message_id: int, platform_message_id: str) -> None:
        """Remember the platform's id of a sent message (e.g. the Telegram message id)."""

        def set_id(connection: Connection) -> None:
            result = connection.execute(
                update(MessageRow)
                .where(MessageRow.id == message_id)
                .values(platform_message_id=platform_message_id)
            )
            if rowcount(result) == 0:
                raise NotFoundError(f"message {message_id} does not exist")

        await self._write(set_id)


def insert_attachments(
    connection: Connection, message_ids: Sequence[int], messages: Sequence[Message]
) -> None:
    """One ``attachments`` row per attachment the messages reference (their blobs are kept
    already), in the same transaction as the messages."""
    rows = [
        {
            "message_id": message_id,
            "position": position,
            "kind": ref.kind,
            "sha256": ref.sha256,
            "mime_type": ref.mime_type,
            "size_bytes": ref.size,
            "width": ref.width,
            "height": ref.height,
            "pages": ref.pages,
            "file_name": ref.file_name,
            "platform_file_id": ref.platform_file_id,
        }
        for message_id, message in zip(message_ids, messages, strict=True)
        for position, ref in enumerate(message_attachments(message.get("content")))
    ]
    if rows:
        connection.execute(insert(attachments_table), rows)


def _link_inbound(
    connection: Connection, answers: InboundLink | None, message_id: int, now: datetime
) -> None:
    if answers is not None and answers.platform_message_ids:
        tie_inbound(
            connection,
            answers.platform,
            answers.platform_message_ids,
            user_message_id=message_id,
            updated_at=now,
        )


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

    Keys starting with ``_`` are bookkeeping and are not stored, except ``"_sent_at"`` (the
    platform's time of the message), which has a column; other unknown keys (``name``,
    ``reasoning``...) are kept in ``extra``.
    """
    extra = {
        name: value
        for name, value in message.items()
        if name not in MESSAGE_COLUMN_KEYS and not name.startswith(BOOKKEEPING_PREFIX)
    }
    return {
        "session_id": session_id,
        "role": message["role"],
        "content": stored_content(message.get("content")),
        "tool_calls": message.get("tool_calls"),
        "tool_call_id": message.get("tool_call_id"),
        "extra": extra or None,
        "token_count": token_count,
        "in_context": True,
        "ctx_pos": ctx_pos,
        "kind": kind,
        "created_at": created_at,
        "platform_message_id": platform_message_id,
        "sent_at": message.get("_sent_at"),
    }


def insert_in_context(
    connection: Connection, session_id: int, rows: Sequence[dict[str, Any]]
) -> list[int]:
    """Bulk-insert in-context rows and return their ids in the order of ``rows``.

    SQLite cannot return the ids of an executemany in order, so they are read back by context
    position instead: the caller guarantees that no other in-context row of the session holds
    a position at or after the smallest position in ``rows``.
    """
    if not rows:
        return []
    # Core executemany: the fast path, no ORM bookkeeping per row.
    connection.execute(insert(messages_table), list(rows))
    positions = [row["ctx_pos"] for row in rows]
    result = connection.execute(
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


def _next_ctx_pos(connection: Connection, session_id: int) -> int:
    return int(
        connection.execute(select(_NEXT_CTX_POS), {"ctx_session_id": session_id}).scalar_one()
    )


def message_record(row: Row[Any]) -> MessageRecord:
    """The immutable view of a row of ``select(messages_table)``.

    Messages are read as Core rows, not ORM objects: contexts and exports can be long.
    """
    return MessageRecord(**row._asdict())
