"""The failover election in the database: one holder at a time, a new epoch at each takeover,
writes of an old epoch refused, migrations run once however many gateways start together."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

from gateway.store import leases
from gateway.store.db import async_url, open_store
from gateway.store.leases import LeaseFence, LeaseLostError, MemberIdentity
from gateway.store.repository import Repository
from gateway.store.writer import run_jobs

ONE = MemberIdentity("host-a:1:x", "host-a", 1)
TWO = MemberIdentity("host-b:2:y", "host-b", 2)
LEASE = 30.0


@asynccontextmanager
async def election_connection(url: str) -> AsyncIterator[AsyncConnection]:
    """A dedicated autocommit connection, as each gateway's election holds one."""
    engine = create_async_engine(async_url(url), poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await leases.ensure_lease(connection)
            yield connection
    finally:
        await engine.dispose()


async def test_migrations_run_once_when_three_stores_open_together_on_an_empty_database(
    pg_url: str,
) -> None:
    stores = await asyncio.gather(*(open_store(pg_url) for _ in range(3)))
    try:
        async with stores[0].engine.connect() as connection:
            heads = (
                await connection.execute(text("SELECT count(*) FROM alembic_version"))
            ).scalar()
        assert heads == 1
    finally:
        for store in stores:
            await store.close()


async def test_one_holder_at_a_time_and_a_release_hands_over_with_the_next_epoch(
    pg_store: object, pg_url: str
) -> None:
    async with election_connection(pg_url) as one, election_connection(pg_url) as two:
        assert await leases.try_take(one, ONE, LEASE) == 1
        assert await leases.try_take(two, TWO, LEASE) is None
        assert await leases.renew(one, 1, LEASE)
        await leases.release(one, 1)
        assert await leases.try_take(two, TWO, LEASE) == 2
        assert not await leases.renew(one, 1, LEASE)
        lease = await leases.read_lease(two)
    assert lease is not None
    assert (lease.holder, lease.epoch, lease.takeovers, lease.live) == ("host-b:2", 2, 1, True)


async def test_a_holder_whose_session_ended_is_replaced_at_once(
    pg_store: object, pg_url: str
) -> None:
    async with election_connection(pg_url) as two:
        async with election_connection(pg_url) as one:
            assert await leases.try_take(one, ONE, LEASE) == 1
        # One's session is gone (as after kill -9): no need to wait out the 30 s lease.
        epoch = None
        async with asyncio.timeout(10):
            while epoch is None:  # the backend may take a moment to leave pg_stat_activity
                epoch = await leases.try_take(two, TWO, LEASE)
                await asyncio.sleep(0.05)
        assert epoch == 2


async def test_an_expired_lease_is_taken_over_while_its_holder_is_still_connected(
    pg_store: object, pg_url: str
) -> None:
    async with election_connection(pg_url) as one, election_connection(pg_url) as two:
        assert await leases.try_take(one, ONE, 1.0) == 1
        epoch = None
        async with asyncio.timeout(10):
            while epoch is None:
                epoch = await leases.try_take(two, TWO, 1.0)
                await asyncio.sleep(0.05)
        assert epoch == 2
        # The old holder's renewal is refused: it steps down.
        assert not await leases.renew(one, 1, 1.0)


async def test_writes_of_an_old_epoch_are_refused_by_the_database(pg_url: str) -> None:
    refused: list[int] = []
    fence = LeaseFence(1, lambda: 1, lambda: refused.append(1), idle_seconds=5)
    store = await open_store(pg_url, fence=fence)
    try:
        async with election_connection(pg_url) as one, election_connection(pg_url) as two:
            assert await leases.try_take(one, ONE, LEASE) == 1
            repo = Repository(store)
            await repo.check_writable()  # epoch 1 holds the lease: accepted
            # A paused leader's open write cannot hold a takeover back longer than this.
            assert await store.write(show_idle_timeout) == "5s"
            async with store.engine.connect() as connection:  # reads are not concerned
                assert await connection.scalar(text(SHOW_IDLE)) == "0"
            await leases.release(one, 1)
            assert await leases.try_take(two, TWO, LEASE) == 2
            with pytest.raises(LeaseLostError):
                await repo.check_writable()
    finally:
        await store.close()
    assert refused == [1]


SHOW_IDLE = "SHOW idle_in_transaction_session_timeout"


def show_idle_timeout(connection: Connection) -> str:
    return str(connection.scalar(text(SHOW_IDLE)))


def test_a_fence_refusal_fails_every_job_of_the_batch_without_running_any() -> None:
    ran: list[str] = []

    def refusing(connection: Connection) -> None:
        raise LeaseLostError(3)

    engine = create_engine("sqlite://")
    with engine.connect() as connection:
        outcomes, replayed = run_jobs(
            connection, [lambda c: ran.append("a"), lambda c: ran.append("b")], refusing
        )
    assert ran == []
    assert not replayed
    assert [ok for ok, _ in outcomes] == [False, False]
    assert all(isinstance(error, LeaseLostError) for _, error in outcomes)
