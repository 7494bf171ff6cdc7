"""One gateway's standing in the election, in-process on a real PostgreSQL database: taking
the lease, handing it over, the send gate by the monotonic clock, a fenced write that makes the
leader step down."""

from __future__ import annotations

import asyncio

import pytest

from gateway.runtime.election import Election, NotLeaderError
from gateway.store.db import open_store, upgrade_database
from gateway.store.leases import LeaseLostError, MemberIdentity
from gateway.store.repository import Repository

A = MemberIdentity("host-a:1:x", "host-a", 1)
B = MemberIdentity("host-b:2:y", "host-b", 2)
LEASE = 30.0  # long: every handover here is a release or a step-down, never an expiry


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_resigned_lease_goes_to_the_waiting_standby_with_the_next_epoch(
    pg_url: str,
) -> None:
    await upgrade_database(pg_url)
    async with Election(pg_url, LEASE, A) as a, Election(pg_url, LEASE, B) as b:
        assert await a.campaign() == 1
        waiting = asyncio.create_task(b.campaign())
        a.step_down("the test says so")
        assert a.lost.is_set() and a.epoch is None
        with pytest.raises(NotLeaderError):
            a.check_may_send()
        await a.resign(1)
        assert await asyncio.wait_for(waiting, 10) == 2
        b.check_may_send()  # the new leader may send


async def test_the_send_gate_closes_once_the_last_renewal_no_longer_vouches(
    pg_url: str,
) -> None:
    await upgrade_database(pg_url)
    clock = Clock()
    async with Election(pg_url, LEASE, A, clock=clock) as a:
        await a.campaign()
        clock.now += LEASE * 0.5
        a.check_may_send()
        clock.now += LEASE * 0.45  # past 90% of the lease since the last renewal began
        with pytest.raises(NotLeaderError):
            a.check_may_send()
        assert a.lost.is_set() and a.epoch is None


async def test_a_write_after_another_gateway_took_over_is_refused_and_ends_the_term(
    pg_url: str,
) -> None:
    await upgrade_database(pg_url)
    async with Election(pg_url, LEASE, A) as a, Election(pg_url, LEASE, B) as b:
        await a.campaign()
        store = await open_store(pg_url, fence=a.fence())
        try:
            repo = Repository(store)
            await repo.check_writable()
            # B takes over behind A's back (A's lease released, as after a pause and expiry).
            await a.resign(1)
            assert await b.campaign() == 2
            assert a.epoch == 1  # A has not noticed yet...
            with pytest.raises(LeaseLostError):
                await repo.check_writable()
            assert a.lost.is_set() and a.epoch is None  # ...the database told it
        finally:
            await store.close()
