"""Failover as operators see it: who leads, since when, the standbys seen, takeovers counted.

Read from the rows the election writes (:mod:`gateway.store.leases`), so ``/status``,
``hermes doctor``, the dashboard and ``/metrics`` say the same thing on every host, leader or
standby, and also from a standalone ``hermes dashboard``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import Table, func, select

from gateway.store.leases import LEADER, LEASE_NAME, STANDBY, Lease, Member
from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import GatewayLeaseRow, GatewayMemberRow

_leases = cast(Table, GatewayLeaseRow.__table__)
_members = cast(Table, GatewayMemberRow.__table__)

DEFAULT_LEASE = timedelta(seconds=10)
MIN_LEASE = timedelta(seconds=1)
MEMBER_SEEN_LEASES = 3
"""A member is listed as seen while its heartbeat is at most three leases old."""


@dataclass(frozen=True, slots=True)
class FailoverState:
    """The election as the database holds it now."""

    lease: Lease
    members: list[Member]
    """Members seen recently (leader and standbys), oldest first."""
    now: datetime
    """The database's clock when this was read (ages are measured against it)."""

    @property
    def standbys(self) -> list[Member]:
        """The members seen standing by."""
        return [member for member in self.members if member.role == STANDBY]

    @property
    def leaders(self) -> list[Member]:
        """The members seen leading (one, or none between two terms)."""
        return [member for member in self.members if member.role == LEADER]


class FailoverQueries(RepositoryBase):
    """Reading the lease and the members seen."""

    async def failover_state(self) -> FailoverState | None:
        """The election's state, None when no gateway ever ran with failover here."""
        async with self._reading() as session:
            row = (
                await session.execute(select(_leases).where(_leases.c.name == LEASE_NAME))
            ).first()
            if row is None:
                return None
            now = (await session.execute(select(func.now()))).scalar_one()
            lease_length = _lease_length(row.renewed_at, row.expires_at)
            since = now - lease_length * MEMBER_SEEN_LEASES
            members = await session.execute(
                select(_members).where(_members.c.seen_at > since).order_by(_members.c.started_at)
            )
        live = row.holder is not None and row.expires_at is not None and row.expires_at > now
        lease = Lease(
            row.epoch,
            row.holder,
            row.host,
            row.pid,
            row.takeovers,
            row.acquired_at,
            row.renewed_at,
            row.expires_at,
            live,
        )
        seen = [Member(m.member, m.host, m.pid, m.role, m.started_at, m.seen_at) for m in members]
        return FailoverState(lease, seen, now)


def _lease_length(renewed_at: datetime | None, expires_at: datetime | None) -> timedelta:
    """The lease's length as the leader set it (expiry minus last renewal)."""
    if renewed_at is None or expires_at is None:
        return DEFAULT_LEASE
    return max(expires_at - renewed_at, MIN_LEASE)
