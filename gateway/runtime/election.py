"""A gateway's part in the failover election: standing by, taking the lease, keeping it.

Each ``hermes gateway run`` with ``gateway.failover.enabled`` holds one **dedicated database
connection** outside the store's pool (a pooled connection may be reset or replaced; this one's
backend is what the standbys watch, see :mod:`gateway.store.leases`). On it a standby tries to
take the lease every :attr:`Election.poll_seconds`, and every gateway heartbeats its member row;
the leader renews the lease every third of ``lease_seconds``.

A leader steps down **at once** (:attr:`Election.lost` is set, one WARNING says why) when a
renewal fails or finds the lease gone, when the store's fence refuses a write
(:class:`~gateway.store.leases.LeaseLostError`), or when something is about to be sent to a
platform past the time the last renewal vouches for (:meth:`Election.check_may_send`, the
adapters' send gate, by this host's monotonic clock, which keeps counting while the process
is paused). The database refuses a fenced leader's writes; the gate keeps it from talking to
a platform in the moment between a write and the send that follows it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from gateway.messages.failures import failure_summary
from gateway.store import leases
from gateway.store.db import async_url
from gateway.store.leases import LEADER, STANDBY, Lease, LeaseFence, MemberIdentity

log = logging.getLogger(__name__)

T = TypeVar("T")

RENEWALS_PER_LEASE = 3
"""The leader renews three times per lease: two renewals may be lost before it must stop."""
MAX_POLL_SECONDS = 1.0
"""A standby looks at the lease at least this often: a dead leader's session ending is seen
within about this long."""
SEND_WINDOW_FRACTION = 0.9
"""Of the lease a renewal vouches for, the part in which this leader still sends: the rest is
a margin for the two clocks (ours and the database's) running apart."""


class NotLeaderError(RuntimeError):
    """Something was about to be sent to a platform by a gateway that may no longer lead."""


def this_member() -> MemberIdentity:
    """This process as the election names it: host, pid and a random run id."""
    host = socket.gethostname()
    pid = os.getpid()
    return MemberIdentity(member=f"{host}:{pid}:{uuid.uuid4().hex[:8]}", host=host, pid=pid)


class Election:
    """This gateway's standing in the election; an async context manager around its
    dedicated connection.

    :meth:`campaign` waits until this gateway leads; then :attr:`epoch` is set, the store of
    the term is opened with :meth:`fence` and the adapters with :meth:`check_may_send`, and
    :attr:`lost` is set when the term ends.
    """

    def __init__(
        self,
        url: str,
        lease_seconds: float,
        me: MemberIdentity | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.lease_seconds = lease_seconds
        self.me = me or this_member()
        self.renew_seconds = lease_seconds / RENEWALS_PER_LEASE
        self.poll_seconds = min(MAX_POLL_SECONDS, lease_seconds / 4)
        self._clock = clock
        self.epoch: int | None = None
        """The epoch this gateway leads under (None: standing by)."""
        self.lost = asyncio.Event()
        """Set when the current term ended (cleared when a new one starts)."""
        self.last_seen: Lease | None = None
        """The lease as last read (who leads, since when, takeovers)."""
        self._send_until = 0.0
        self._engine: AsyncEngine | None = None
        self._connection: AsyncConnection | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Election:
        await self._connect()
        self._keeper = asyncio.create_task(self._keep(), name="failover-keeper")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            with suppress(asyncio.CancelledError):
                await self._keeper
        with suppress(SQLAlchemyError, OSError):
            async with self._session() as connection:
                if self.epoch is not None:
                    await leases.release(connection, self.epoch)
                    log.info(
                        "failover: lease released (epoch %d): a standby takes over", self.epoch
                    )
                await leases.leave(connection, self.me)
        self.epoch = None
        await self._disconnect()
        if self._engine is not None:
            await self._engine.dispose()

    # -- standing by and taking over ------------------------------------------------------

    async def campaign(self) -> int:
        """Wait until this gateway takes the lease; returns the new epoch."""
        while True:
            with suppress(SQLAlchemyError, OSError):
                epoch = await self._try_take()
                if epoch is not None:
                    return epoch
            await asyncio.sleep(self.poll_seconds)

    async def _try_take(self) -> int | None:
        started = self._clock()
        async with self._session() as connection:
            epoch = await leases.try_take(connection, self.me, self.lease_seconds)
        if epoch is None:
            return None
        previous = self.last_seen
        self.epoch = epoch
        self._send_until = started + self.lease_seconds * SEND_WINDOW_FRACTION
        self.lost.clear()
        await self._beat(LEADER)  # (a heartbeat that fails is only a stale "seen")
        before = f" after {previous.holder}" if previous and previous.holder else ""
        log.warning("failover: leading as %s (epoch %d%s)", self.me.holder, epoch, before)
        return epoch

    # -- leading ---------------------------------------------------------------------------

    def fence(self) -> LeaseFence:
        """The store fence of the current term (see :class:`~gateway.store.leases.LeaseFence`)."""
        if self.epoch is None:
            raise NotLeaderError("no term to fence: this gateway stands by")
        return LeaseFence(
            self.epoch,
            current=lambda: self.epoch,
            on_refused=lambda: self.step_down("a write was refused (fenced)"),
            idle_seconds=self.lease_seconds,
        )

    def check_may_send(self) -> None:
        """The adapters' send gate: raises :class:`NotLeaderError` (and steps down) unless
        this gateway leads and its last renewal still vouches for now."""
        if self.epoch is None or self.lost.is_set():
            raise NotLeaderError("this gateway does not lead: nothing is sent")
        if self._clock() >= self._send_until:
            self.step_down("the lease was not renewed in time")
            raise NotLeaderError("the lease was not renewed in time: nothing is sent")

    async def resign(self, epoch: int) -> None:
        """After a term ended here: free the lease if it still names this gateway at
        ``epoch`` (a step-down this side noticed first), so a standby need not wait for it to
        expire. Nothing happens when another gateway took it meanwhile."""
        with suppress(SQLAlchemyError, OSError):
            async with self._session() as connection:
                await leases.release(connection, epoch)

    def step_down(self, reason: str) -> None:
        """End the current term at once (no-op when standing by)."""
        if self.epoch is None:
            return
        log.warning("failover: stepping down from epoch %d: %s", self.epoch, reason)
        self.epoch = None
        self._send_until = 0.0
        self.lost.set()

    async def _keep(self) -> None:
        """Renew while leading, heartbeat while standing by, for as long as the election runs."""
        while True:
            await asyncio.sleep(self.renew_seconds)
            epoch = self.epoch
            try:
                if epoch is not None:
                    await self._renew(epoch)
                else:
                    await self._beat(STANDBY)
                    await self._watch_leader()
            except (SQLAlchemyError, OSError) as exc:
                if epoch is not None:
                    self.step_down(f"the lease could not be renewed ({failure_summary(exc)})")
                else:
                    log.warning("failover: database unreachable: %s", failure_summary(exc))
                async with self._lock:
                    await self._disconnect()

    async def _renew(self, epoch: int) -> None:
        started = self._clock()
        async with self._session() as connection:
            renewed = await leases.renew(connection, epoch, self.lease_seconds)
        if self.epoch != epoch:
            return  # stepped down meanwhile
        if not renewed:
            self.step_down("the lease expired or moved to another gateway")
            return
        self._send_until = started + self.lease_seconds * SEND_WINDOW_FRACTION
        await self._beat(LEADER)

    async def _watch_leader(self) -> None:
        """Read the lease; one INFO line each time a standby sees another leader."""
        async with self._session() as connection:
            lease = await leases.read_lease(connection)
        if lease is None:
            return
        seen = self.last_seen
        self.last_seen = lease
        changed = seen is None or (seen.epoch, seen.holder) != (lease.epoch, lease.holder)
        if lease.holder and changed:
            log.info("failover: standing by; %s leads (epoch %d)", lease.holder, lease.epoch)

    async def _beat(self, role: str) -> None:
        """Report ``role`` in the members seen; a failure is not the lease's, so it is only
        logged."""
        try:
            async with self._session() as connection:
                await leases.heartbeat(connection, self.me, role)
        except (SQLAlchemyError, OSError) as exc:
            log.warning("failover: heartbeat not recorded: %s", failure_summary(exc))

    async def use(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """Run ``work`` on the election's connection (a standby's only one: the webhook
        inbox writes there)."""
        async with self._session() as connection:
            return await work(connection)

    # -- the dedicated connection ------------------------------------------------------------

    async def _connect(self) -> None:
        if self._engine is None:
            self._engine = create_async_engine(
                async_url(self.url), poolclass=NullPool, hide_parameters=True
            )
        connection = await self._engine.connect()
        self._connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        await leases.ensure_lease(self._connection)

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncConnection]:
        """The dedicated connection, for one task at a time (the keeper, the campaign and
        the status readers share it; a driver connection runs one operation at a time)."""
        async with self._lock:
            if self._connection is None or self._connection.closed:
                await self._connect()
            assert self._connection is not None
            yield self._connection

    async def _disconnect(self) -> None:
        """Close the connection (the next use opens a new one)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            with suppress(SQLAlchemyError, OSError):
                await connection.close()
