"""The store's group-commit writer: many writes per transaction, each caller its own outcome."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Connection, text

from gateway.store.db import Store, open_store
from gateway.store.repository import Repository


async def record(repo: Repository, message_id: str) -> bool:
    return await repo.record_inbound(
        "telegram", message_id, session_key="telegram:42", chat_id="42", user_id="7", text="hi"
    )


def failing_job(connection: Connection) -> None:
    connection.execute(text("SELECT 1"))
    raise ValueError("this write is refused")


async def test_concurrent_writes_share_commits_and_all_survive_a_reopen(db_url: str) -> None:
    store = await open_store(db_url)
    repo = Repository(store)
    fresh = await asyncio.gather(*(record(repo, str(n)) for n in range(50)))
    stats = store.writer.stats
    jobs, batches, largest = stats.jobs, stats.batches, stats.largest_batch
    await store.close()

    reopened = await open_store(db_url)
    try:
        pending = await Repository(reopened).pending_inbound("telegram")
    finally:
        await reopened.close()

    assert all(fresh)
    assert jobs >= 50
    assert batches < jobs
    assert largest > 1
    assert sorted(int(p.platform_message_id) for p in pending) == list(range(50))


async def test_a_failing_write_gets_its_error_and_the_rest_of_its_batch_commits(
    store: Store, repo: Repository
) -> None:
    outcomes = await asyncio.gather(
        record(repo, "1"),
        store.write(failing_job),
        record(repo, "2"),
        return_exceptions=True,
    )
    pending = await repo.pending_inbound("telegram")

    assert outcomes[0] is True and outcomes[2] is True
    assert isinstance(outcomes[1], ValueError)
    assert [p.platform_message_id for p in pending] == ["1", "2"]
    assert store.writer.stats.replayed_batches == 1


async def test_a_write_cancelled_before_it_started_never_happens(
    store: Store, repo: Repository
) -> None:
    ran: list[str] = []

    def noted_job(connection: Connection) -> None:
        ran.append("ran")

    async with store.write_lock:  # the writer cannot take a batch until this block ends
        withdrawn = asyncio.create_task(store.write(noted_job))
        await asyncio.sleep(0)  # queued, not started
        withdrawn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await withdrawn
    await record(repo, "1")  # a later batch: the withdrawn job would have run by now

    assert ran == []


async def test_writing_to_a_closed_store_is_refused(db_url: str) -> None:
    store = await open_store(db_url)
    await store.close()

    with pytest.raises(RuntimeError, match="closed"):
        await store.write(failing_job)
