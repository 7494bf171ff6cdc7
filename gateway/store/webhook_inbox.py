"""The webhook inbox (failover): Telegram updates a standby received, kept for the leader.

Behind a load balancer any host may receive a webhook update. A standby runs no adapter and
must not act, but the update must be durable before the 2xx (Telegram drops it after one):
:func:`keep_update` stores it raw, idempotent by update id, on the standby's election
connection. The leader reads the inbox (:class:`WebhookInboxQueries`), hands each update to
its adapter as if POSTed to it (recorded in the inbound table, duplicates dropped), then
deletes it through the fenced writer.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, Table, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import WebhookInboxRow, utcnow

_inbox = cast(Table, WebhookInboxRow.__table__)


async def keep_update(
    connection: AsyncConnection, platform: str, update_id: int, payload: dict[str, Any]
) -> None:
    """Store one update for the leader (PostgreSQL; a second copy of an update is ignored)."""
    row = {
        "platform": platform,
        "update_id": update_id,
        "payload": payload,
        "received_at": utcnow(),
    }
    await connection.execute(pg_insert(_inbox).values(row).on_conflict_do_nothing())


class WebhookInboxQueries(RepositoryBase):
    """The leader's side of the inbox: what is waiting, and deleting what it took in."""

    async def waiting_webhook_updates(
        self, platform: str, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Updates kept by standbys, oldest update id first."""
        query = (
            select(_inbox.c.payload)
            .where(_inbox.c.platform == platform)
            .order_by(_inbox.c.update_id)
            .limit(limit)
        )
        async with self._reading() as session:
            return [dict(payload) for payload in (await session.execute(query)).scalars()]

    async def drop_webhook_updates(self, platform: str, update_ids: list[int]) -> None:
        """Delete updates the leader took in (a fenced write, like every leader's write)."""

        def drop(connection: Connection) -> None:
            connection.execute(
                delete(_inbox).where(
                    _inbox.c.platform == platform, _inbox.c.update_id.in_(update_ids)
                )
            )

        await self._write(drop)
