"""The election of one leader among gateways sharing a PostgreSQL database, and its fence.

One row of ``gateway_leases`` per group says who leads, under which **epoch** and until when.
Expiry is computed with the database's ``now()``, never a host's clock. A standby takes the
lease, with the epoch incremented, when it expired (a hung or partitioned leader stopped
renewing), when it was released (a leader that stopped cleanly), or at once when the holder's
election session is gone from ``pg_stat_activity`` (the leader's process died: its connection
closed and its backend ended). That last check gives a ``kill -9`` the fast takeover a session
advisory lock would, without a second source of truth: a lock held by a paused process would
outlive its lease, and after a takeover by expiry the lock and the lease would name different
holders.

The epoch is the fencing token: :class:`LeaseFence` makes every batch of the store's writer
begin with ``SELECT ... FOR SHARE`` on the lease row at the leader's epoch, so a write of a
leader that lost the lease is refused by the database (:class:`LeaseLostError`), and a
takeover (an ``UPDATE`` of that row) waits for the writes of the old epoch in flight to commit
before the new leader reads the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncConnection

log = logging.getLogger(__name__)

LEASE_NAME = "gateway"
"""The one group of gateways a database holds."""

LEADER = "leader"
STANDBY = "standby"

_ENSURE_ROW = text(
    "INSERT INTO gateway_leases (name, epoch, takeovers) VALUES (:name, 0, 0) "
    "ON CONFLICT (name) DO NOTHING"
)
_TAKE = text(
    """
    UPDATE gateway_leases SET
        epoch = epoch + 1,
        takeovers = takeovers + CASE WHEN epoch > 0 THEN 1 ELSE 0 END,
        holder = :holder, host = :host, pid = :pid, backend_pid = pg_backend_pid(),
        acquired_at = now(), renewed_at = now(),
        expires_at = now() + make_interval(secs => :lease_seconds)
    WHERE name = :name AND (
        holder IS NULL
        OR expires_at <= now()
        OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = gateway_leases.backend_pid)
    )
    RETURNING epoch
    """
)
_RENEW = text(
    "UPDATE gateway_leases SET renewed_at = now(), "
    "expires_at = now() + make_interval(secs => :lease_seconds) "
    "WHERE name = :name AND epoch = :epoch AND expires_at > now() RETURNING epoch"
)
_RELEASE = text(
    "UPDATE gateway_leases SET holder = NULL, expires_at = now() "
    "WHERE name = :name AND epoch = :epoch"
)
_READ = text(
    "SELECT epoch, holder, host, pid, takeovers, acquired_at, renewed_at, expires_at, "
    "expires_at > now() AS live FROM gateway_leases WHERE name = :name"
)
_HEARTBEAT = text(
    "INSERT INTO gateway_members (member, host, pid, role, started_at, seen_at) "
    "VALUES (:member, :host, :pid, :role, now(), now()) "
    "ON CONFLICT (member) DO UPDATE SET role = excluded.role, seen_at = now()"
)
_LEAVE = text("DELETE FROM gateway_members WHERE member = :member")
_MEMBERS = text(
    "SELECT member, host, pid, role, started_at, seen_at FROM gateway_members "
    "WHERE seen_at > now() - make_interval(secs => :within) ORDER BY started_at"
)
_FORGET_GONE = text(
    "DELETE FROM gateway_members WHERE seen_at < now() - make_interval(secs => :after)"
)
# set_config(..., true) is SET LOCAL: for this write's transaction only, in the same round trip.
_FENCE = text(
    "SELECT set_config('idle_in_transaction_session_timeout', :idle_ms, true) "
    "FROM gateway_leases WHERE name = :name AND epoch = :epoch FOR SHARE"
)

MEMBER_FORGOTTEN_SECONDS = 24 * 3600.0
"""A member not seen for this long is deleted (a host retired, a pid long gone)."""


class LeaseLostError(RuntimeError):
    """A write acting for the leader was refused: a newer epoch holds the lease."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        super().__init__(f"the leader lease moved past epoch {epoch}: this gateway is fenced")


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """One gateway process in the election: ``member`` is unique per process run."""

    member: str
    host: str
    pid: int

    @property
    def holder(self) -> str:
        """How the lease row names this process: ``host:pid``."""
        return f"{self.host}:{self.pid}"


@dataclass(frozen=True, slots=True)
class Lease:
    """The lease as the database holds it now."""

    epoch: int
    holder: str | None
    host: str | None
    pid: int | None
    takeovers: int
    acquired_at: datetime | None
    renewed_at: datetime | None
    expires_at: datetime | None
    live: bool
    """Whether it has a holder and has not expired (by the database's clock)."""


@dataclass(frozen=True, slots=True)
class Member:
    """A gateway seen recently, with the role it last reported."""

    member: str
    host: str
    pid: int
    role: str
    started_at: datetime
    seen_at: datetime


async def ensure_lease(connection: AsyncConnection) -> None:
    """Create the group's lease row (epoch 0, no holder) if it is not there yet."""
    await connection.execute(_ENSURE_ROW, {"name": LEASE_NAME})


async def try_take(
    connection: AsyncConnection, me: MemberIdentity, lease_seconds: float
) -> int | None:
    """Take the lease if it is free, expired or its holder's session ended; the new epoch,
    or None when another gateway holds it. ``connection`` is the election's own: its backend
    is what standbys watch."""
    params = {
        "name": LEASE_NAME,
        "holder": me.holder,
        "host": me.host,
        "pid": me.pid,
        "lease_seconds": lease_seconds,
    }
    return (await connection.execute(_TAKE, params)).scalar_one_or_none()


async def renew(connection: AsyncConnection, epoch: int, lease_seconds: float) -> bool:
    """Extend the lease held at ``epoch``; False when it expired or moved on (step down)."""
    params = {"name": LEASE_NAME, "epoch": epoch, "lease_seconds": lease_seconds}
    return (await connection.execute(_RENEW, params)).first() is not None


async def release(connection: AsyncConnection, epoch: int) -> None:
    """Give the lease up (a clean stop): a standby takes it at its next attempt."""
    await connection.execute(_RELEASE, {"name": LEASE_NAME, "epoch": epoch})


async def read_lease(connection: AsyncConnection) -> Lease | None:
    """The lease row, None before any gateway ran with failover on this database."""
    row = (await connection.execute(_READ, {"name": LEASE_NAME})).first()
    if row is None:
        return None
    return Lease(*row)


async def heartbeat(connection: AsyncConnection, me: MemberIdentity, role: str) -> None:
    """Record that ``me`` is alive in ``role`` now (the database's clock)."""
    params = {"member": me.member, "host": me.host, "pid": me.pid, "role": role}
    await connection.execute(_HEARTBEAT, params)


async def leave(connection: AsyncConnection, me: MemberIdentity) -> None:
    """Remove ``me`` from the members seen (a clean stop) and forget long-gone members."""
    await connection.execute(_LEAVE, {"member": me.member})
    await connection.execute(_FORGET_GONE, {"after": MEMBER_FORGOTTEN_SECONDS})


async def members_seen(connection: AsyncConnection, within_seconds: float) -> list[Member]:
    """The gateways that heartbeat within the last ``within_seconds``, oldest first."""
    rows = await connection.execute(_MEMBERS, {"within": within_seconds})
    return [Member(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class LeaseFence:
    """The check the store's writer runs first in every batch while this gateway leads.

    Raises :class:`LeaseLostError` when the term already ended here (``current``, this
    gateway's epoch now, differs: no round trip) or when the lease row holds another epoch
    (after telling ``on_refused``). The ``FOR SHARE`` row lock holds a takeover back until
    the batch commits; so that a paused leader's open write cannot hold it back for long, the
    server ends a session left idle inside that transaction after ``idle_seconds`` (only
    there: reads and the rest of the pool are not concerned).
    """

    epoch: int
    current: Callable[[], int | None]
    on_refused: Callable[[], None]
    idle_seconds: float

    def __call__(self, connection: Connection) -> None:
        if self.current() != self.epoch:
            raise LeaseLostError(self.epoch)
        params = {
            "name": LEASE_NAME,
            "epoch": self.epoch,
            "idle_ms": str(max(1, int(self.idle_seconds * 1000))),
        }
        row = connection.execute(_FENCE, params).first()
        if row is None:
            self.on_refused()
            raise LeaseLostError(self.epoch)
