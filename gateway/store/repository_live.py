"""Live messages: the platform messages of a reply shown while it was written.

Recorded right after each is sent and before it is first edited, keyed by the inbound message
the reply answers; read back by delivery (to edit them into the final parts instead of sending
new ones) and by a turn resumed after a crash (to go on editing them).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import cast

from sqlalchemy import Connection, Table, insert, select

from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import LiveMessageRow, utcnow

live_messages_table = cast(Table, LiveMessageRow.__table__)
ANCHOR_WINDOW = timedelta(days=7)
"""How far back a reply's live messages are looked for (a turn resumed after a longer outage
sends its reply anew)."""


class LiveMessageQueries(RepositoryBase):
    """Recording and finding the live messages of a reply."""

    async def record_live_message(
        self, platform: str, chat_id: str, anchor: str, index: int, platform_message_id: str
    ) -> None:
        """Remember that part ``index`` of the reply to ``anchor`` is shown in this message."""
        row = {
            "platform": platform,
            "chat_id": chat_id,
            "anchor": anchor,
            "part_index": index,
            "platform_message_id": platform_message_id,
            "created_at": utcnow(),
        }

        def add(connection: Connection) -> None:
            connection.execute(insert(live_messages_table), row)

        anchors = await self._live_anchors()
        await self._write(add)
        anchors.add((platform, chat_id, anchor))

    async def _live_anchors(self) -> set[tuple[str, str, str]]:
        """The anchors with live messages, recorded in the last :data:`ANCHOR_WINDOW` (one
        daemon writes them: ``gateway.lock``)."""
        store = self.store
        if store.live_anchors is None:
            since = utcnow() - ANCHOR_WINDOW
            query = select(
                LiveMessageRow.platform, LiveMessageRow.chat_id, LiveMessageRow.anchor
            ).where(LiveMessageRow.created_at >= since)
            async with self._reading() as session:
                rows = (await session.execute(query)).all()
            if store.live_anchors is None:
                store.live_anchors = {(str(p), str(c), str(a)) for p, c, a in rows}
        return store.live_anchors

    async def live_messages(self, platform: str, chat_id: str, anchors: Sequence[str]) -> list[str]:
        """The platform ids of the live messages of the reply to any of ``anchors`` (the
        inbound messages of one turn), in part order."""
        known = await self._live_anchors()
        if not any((platform, chat_id, anchor) in known for anchor in anchors):
            return []
        query = (
            select(LiveMessageRow.platform_message_id)
            .where(
                LiveMessageRow.platform == platform,
                LiveMessageRow.chat_id == chat_id,
                LiveMessageRow.anchor.in_(list(anchors)),
            )
            .order_by(LiveMessageRow.part_index)
        )
        async with self._reading() as session:
            return [str(value) for value in (await session.scalars(query)).all()]
