"""Inbound platform messages, recorded before they are acknowledged (exactly-once handling)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Connection, Table, bindparam, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from gateway.store.records import INBOUND_STATUSES, UNFINISHED_INBOUND_STATUSES, InboundRecord
from gateway.store.repository_base import NotFoundError, RepositoryBase, rowcount
from gateway.store.tables import InboundRow, utcnow

PENDING_STATUS = "pending"

inbound_table = cast(Table, InboundRow.__table__)
_UNIQUE_INBOUND = ["platform", "platform_message_id"]
_INSERT_UNLESS_SEEN: dict[str, Any] = {
    "sqlite": sqlite_insert(inbound_table)
    .on_conflict_do_nothing(index_elements=_UNIQUE_INBOUND)
    .returning(inbound_table.c.id),
    "postgresql": postgresql_insert(inbound_table)
    .on_conflict_do_nothing(index_elements=_UNIQUE_INBOUND)
    .returning(inbound_table.c.id),
}
"""Per dialect: INSERT ... ON CONFLICT DO NOTHING RETURNING id (no row back: seen before)."""
_UPDATE_INBOUND = update(InboundRow).where(
    InboundRow.platform == bindparam("platform_"),
    InboundRow.platform_message_id == bindparam("platform_message_id_"),
)
"""Built once: the SET clause follows the keys of each call's parameters."""


def insert_inbound_unless_seen(connection: Connection, row: dict[str, Any]) -> bool:
    """Insert an inbound row in a write job; False when its platform id was recorded before."""
    return connection.execute(_INSERT_UNLESS_SEEN[connection.dialect.name], row).first() is not None


class InboundQueries(RepositoryBase):
    """Recording received platform messages and tracking how far their handling got."""

    async def record_inbound(
        self,
        platform: str,
        platform_message_id: str,
        *,
        session_key: str,
        chat_id: str,
        user_id: str | None,
        text: str,
        payload: dict[str, Any] | None = None,
    ) -> bool:
        """Record a received message as pending; False if it was recorded before (redelivery)."""
        now = utcnow()
        row: dict[str, Any] = {
            "platform": platform,
            "platform_message_id": platform_message_id,
            "session_key": session_key,
            "chat_id": chat_id,
            "user_id": user_id,
            "text": text,
            "payload": payload or {},
            "status": PENDING_STATUS,
            "reply_platform_ids": [],
            "received_at": now,
            "updated_at": now,
        }

        def insert_unless_seen(connection: Connection) -> bool:
            # The unique (platform, platform_message_id) says whether we have seen this one; a
            # conflict inserts nothing (no error, so the rest of a group commit is unaffected).
            statement = _INSERT_UNLESS_SEEN[connection.dialect.name]
            return connection.execute(statement, row).first() is not None

        return await self._write(insert_unless_seen)

    async def mark_inbound(
        self,
        platform: str,
        platform_message_id: str,
        status: str,
        *,
        reply_platform_ids: list[str] | None = None,
    ) -> None:
        """Move a recorded message to ``status``, optionally with the ids of the replies sent.

        Raises ValueError for an unknown status and NotFoundError for an unrecorded message.
        """
        replies = None if reply_platform_ids is None else {platform_message_id: reply_platform_ids}
        await self.close_inbound(platform, [platform_message_id], status, replies=replies)

    async def close_inbound(
        self,
        platform: str,
        platform_message_ids: Sequence[str],
        status: str,
        *,
        replies: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Move several recorded messages to ``status`` in one transaction (all or none).

        ``replies`` maps a message id to the ids of the replies sent for it. A turn that merged
        several messages closes them together, so a crash never leaves some of them open.
        Raises like :meth:`mark_inbound`.
        """
        if status not in INBOUND_STATUSES:
            raise ValueError(f"unknown inbound status {status!r}; expected {INBOUND_STATUSES}")
        now = utcnow()
        updates: list[dict[str, Any]] = []
        for platform_message_id in platform_message_ids:
            values: dict[str, Any] = {
                "platform_": platform,
                "platform_message_id_": platform_message_id,
                "status": status,
                "updated_at": now,
            }
            if replies is not None and platform_message_id in replies:
                values["reply_platform_ids"] = list(replies[platform_message_id])
            updates.append(values)

        def update_statuses(connection: Connection) -> None:
            for values in updates:
                if rowcount(connection.execute(_UPDATE_INBOUND, values)) == 0:
                    missing = f"{platform}:{values['platform_message_id_']}"
                    raise NotFoundError(f"inbound {missing} was never recorded")

        await self._write(update_statuses)

    async def get_inbound(self, platform: str, platform_message_id: str) -> InboundRecord | None:
        """The recorded message with this platform id, or None."""
        query = select(InboundRow).where(
            InboundRow.platform == platform,
            InboundRow.platform_message_id == platform_message_id,
        )
        async with self._reading() as session:
            row = await session.scalar(query)
        return inbound_record(row) if row is not None else None

    async def pending_inbound(self, platform: str | None = None) -> list[InboundRecord]:
        """Messages received but not finished (pending or processing), oldest first.

        After a restart these are the messages to handle again.
        """
        query = (
            select(InboundRow)
            .where(InboundRow.status.in_(UNFINISHED_INBOUND_STATUSES))
            .order_by(InboundRow.received_at, InboundRow.id)
        )
        if platform is not None:
            query = query.where(InboundRow.platform == platform)
        async with self._reading() as session:
            rows = (await session.scalars(query)).all()
        return [inbound_record(row) for row in rows]

    async def refused_users(self, platform: str) -> set[str]:
        """Users whose messages were refused (and who were told so) on that platform."""
        query = (
            select(InboundRow.user_id)
            .where(InboundRow.platform == platform, InboundRow.status == "refused")
            .distinct()
        )
        async with self._reading() as session:
            rows = (await session.scalars(query)).all()
        return {str(user_id) for user_id in rows if user_id is not None}


def inbound_record(row: InboundRow) -> InboundRecord:
    """The immutable view of an inbound row."""
    return InboundRecord(
        id=row.id,
        platform=row.platform,
        platform_message_id=row.platform_message_id,
        session_key=row.session_key,
        chat_id=row.chat_id,
        user_id=row.user_id,
        text=row.text,
        payload=dict(row.payload or {}),
        status=row.status,
        reply_platform_ids=tuple(row.reply_platform_ids or ()),
        received_at=row.received_at,
        updated_at=row.updated_at,
        user_message_id=row.user_message_id,
        reply_id=row.reply_id,
        failure=row.failure,
    )
