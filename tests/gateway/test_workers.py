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
