"""Inbound platform messages, recorded before they are acknowledged (exactly-once handling)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from gateway.store.records import INBOUND_STATUSES, UNFINISHED_INBOUND_STATUSES, InboundRecord
from gateway.store.repository_base import NotFoundError, RepositoryBase, rowcount
from gateway.store.tables import InboundRow, utcnow

PENDING_STATUS = "pending"


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
        try:
            async with self._writing() as session:
                await session.execute(
                    insert(InboundRow).values(
                        platform=platform,
                        platform_message_id=platform_message_id,
                        session_key=session_key,
                        chat_id=chat_id,
                        user_id=user_id,
                        text=text,
                        payload=payload or {},
                        status=PENDING_STATUS,
                        reply_platform_ids=[],
                        received_at=now,
                        updated_at=now,
                    )
                )
        except IntegrityError:
            # The unique (platform, platform_message_id) says we have seen this one; any other
            # integrity failure leaves no record behind and is re-raised.
            if await self.get_inbound(platform, platform_message_id) is None:
                raise
            return False
        return True

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
        if status not in INBOUND_STATUSES:
            raise ValueError(f"unknown inbound status {status!r}; expected {INBOUND_STATUSES}")
        values: dict[str, Any] = {"status": status, "updated_at": utcnow()}
        if reply_platform_ids is not None:
            values["reply_platform_ids"] = list(reply_platform_ids)
        async with self._writing() as session:
            result = await session.execute(
                update(InboundRow)
                .where(
                    InboundRow.platform == platform,
                    InboundRow.platform_message_id == platform_message_id,
                )
                .values(**values)
            )
            if rowcount(result) == 0:
                raise NotFoundError(f"inbound {platform}:{platform_message_id} was never recorded")

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
    )
