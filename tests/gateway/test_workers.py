"""Session workers: one batch at a time per key, queued items merged, idle workers dropped."""

from __future__ import annotations

import asyncio

from gateway.runtime.workers import SessionWorkers


async def test_items_arriving_during_a_batch_are_merged_into_the_next_and_idle_workers_exit() -> (
    None
):
    batches: list[list[str]] = []
    release = asyncio.Event()

    async def handle(key: str, batch: list[str]) -> None:
        batches.append(batch)
        if len(batches) == 1:
            await release.wait()

    workers: SessionWorkers[str] = SessionWorkers(
        handle, mergeable=lambda item: not item.startswith("/"), idle_seconds=0.05
    )
    workers.submit("chat", "first")
    await asyncio.sleep(0.01)
    for item in ("second", "third", "/usage", "fourth"):
        workers.submit("chat", item)
    release.set()
    async with asyncio.timeout(5):
        while workers.active_count:  # noqa: ASYNC110 - watching the pool empty itself
            await asyncio.sleep(0.01)
    assert batches == [["first"], ["second", "third"], ["/usage"], ["fourth"]]


async def test_cancel_running_stops_the_batch_but_not_the_worker() -> None:
    started = asyncio.Event()
    handled: list[str] = []

    async def handle(key: str, batch: list[str]) -> None:
        handled.extend(batch)
        if batch == ["slow"]:
            started.set()
            await asyncio.sleep(30)

    workers: SessionWorkers[str] = SessionWorkers(handle, idle_seconds=0.05)
    workers.submit("chat", "slow")
    await started.wait()
    task = workers.cancel_running("chat")
    assert task is not None
    await asyncio.wait({task})
    workers.submit("chat", "next")
    async with asyncio.timeout(5):
        while "next" not in handled:  # noqa: ASYNC110 - a plain list, no event
            await asyncio.sleep(0.01)
    assert task.cancelled()
    await workers.close()


LOOP_TURNS = 50
"""Turns of the event loop in which a waiter that wrongly thought all idle would return."""


async def let_other_tasks_run() -> None:
    """Give every other task :data:`LOOP_TURNS` turns of the event loop (no clock involved)."""
    for _ in range(LOOP_TURNS):
        await asyncio.sleep(0)


async def test_wait_idle_returns_only_once_no_batch_is_running_or_queued() -> None:
    release = asyncio.Event()
    started = asyncio.Event()
    handled: list[list[str]] = []

    async def handle(key: str, batch: list[str]) -> None:
        started.set()
        await release.wait()
        handled.append(batch)

    workers: SessionWorkers[str] = SessionWorkers(handle)
    idle_before = workers.idle
    workers.submit("chat", "first")
    await started.wait()
    workers.submit("chat", "second")  # queued behind the running batch
    waiting = asyncio.create_task(workers.wait_idle())
    await let_other_tasks_run()
    returned_while_running = waiting.done()
    release.set()
    async with asyncio.timeout(5):  # a guard against hangs, not a measurement
        await waiting
    await workers.close()

    assert idle_before
    assert not returned_while_running
    assert handled == [["first"], ["second"]]
