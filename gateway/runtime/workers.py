"""One worker per session key: one agent run at a time, queued messages merged into the next.

A worker is an asyncio task that exists only while its session has work: it takes everything
queued, hands it to the handler as one batch, and repeats; after ``idle_seconds`` without work
it exits and is forgotten, so memory stays flat however many chats the bot has seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_IDLE_SECONDS = 30.0
"""How long a worker waits for more work before it exits."""
DEFAULT_HOLD_SECONDS = 1.0
"""How long to wait for the rest of a message the platform's client split into pieces."""

BatchHandler = Callable[[str, list[T]], Coroutine[Any, Any, None]]


@dataclass(eq=False)
class _Worker(Generic[T]):
    queue: list[T] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    running: asyncio.Task[None] | None = None


class SessionWorkers(Generic[T]):
    """Runs ``handler(key, batch)`` for queued items, one batch at a time per key.

    ``mergeable(item)`` says whether an item may share a batch with its neighbours (ordinary
    messages do, commands do not); ``holds(item)`` says whether to wait up to ``hold_seconds``
    for a follow-up before starting a batch that ends with it.
    """

    def __init__(
        self,
        handler: BatchHandler[T],
        *,
        mergeable: Callable[[T], bool] = lambda item: True,
        holds: Callable[[T], bool] = lambda item: False,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        hold_seconds: float = DEFAULT_HOLD_SECONDS,
    ) -> None:
        self._handler = handler
        self._mergeable = mergeable
        self._holds = holds
        self.idle_seconds = idle_seconds
        self.hold_seconds = hold_seconds
        self._workers: dict[str, _Worker[T]] = {}
        self._closed = False
        self._settled = asyncio.Event()
        """Set whenever a batch ends or work is dropped: wakes :meth:`wait_idle` to look again."""

    @property
    def active_count(self) -> int:
        """Workers alive now (sessions with queued or running work, or recently busy)."""
        return len(self._workers)

    @property
    def queued_count(self) -> int:
        """Items waiting for their batch (not counting the batches running now)."""
        return sum(len(worker.queue) for worker in self._workers.values())

    @property
    def idle(self) -> bool:
        """Whether no session has work queued or a batch running."""
        return not any(
            worker.queue or (worker.running is not None and not worker.running.done())
            for worker in self._workers.values()
        )

    async def wait_idle(self) -> None:
        """Return once no session has work queued or a batch running (at once if none has)."""
        while not self.idle:
            self._settled.clear()
            await self._settled.wait()

    def submit(self, key: str, item: T) -> None:
        """Queue an item for its session, starting the session's worker if needed."""
        if self._closed:
            raise RuntimeError("the workers are closed")
        worker = self._workers.get(key)
        if worker is None:
            worker = _Worker()
            self._workers[key] = worker
            worker.task = asyncio.create_task(self._run(key, worker), name=f"worker:{key}")
        worker.queue.append(item)
        worker.arrived.set()

    def cancel_running(self, key: str) -> asyncio.Task[None] | None:
        """Cancel the batch running for ``key``; returns its task (to await), None if idle."""
        worker = self._workers.get(key)
        if worker is None or worker.running is None or worker.running.done():
            return None
        worker.running.cancel()
        return worker.running

    def is_running(self, key: str) -> bool:
        """Whether a batch is being handled for ``key`` right now."""
        worker = self._workers.get(key)
        return worker is not None and worker.running is not None and not worker.running.done()

    async def _run(self, key: str, worker: _Worker[T]) -> None:
        try:
            while await self._wait_for_work(worker):
                await self._hold_for_continuation(worker)
                batch = self._take_batch(worker)
                worker.running = asyncio.create_task(self._handler(key, batch))
                # wait() rather than await: a batch cancelled by /stop must not end the worker.
                await asyncio.wait({worker.running})
                self._settled.set()
                if not worker.running.cancelled() and worker.running.exception() is not None:
                    log.error("session %s: batch failed", key, exc_info=worker.running.exception())
        finally:
            if worker.running is not None and not worker.running.done():
                worker.running.cancel()
            if self._workers.get(key) is worker:
                del self._workers[key]
            self._settled.set()

    async def _wait_for_work(self, worker: _Worker[T]) -> bool:
        while not worker.queue:
            worker.arrived.clear()
            try:
                await asyncio.wait_for(worker.arrived.wait(), self.idle_seconds)
            except TimeoutError:
                return bool(worker.queue)
        return True

    async def _hold_for_continuation(self, worker: _Worker[T]) -> None:
        while worker.queue and self._holds(worker.queue[-1]):
            seen = len(worker.queue)
            worker.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(worker.arrived.wait(), self.hold_seconds)
            if len(worker.queue) == seen:
                return

    def _take_batch(self, worker: _Worker[T]) -> list[T]:
        first = worker.queue.pop(0)
        batch = [first]
        if not self._mergeable(first):
            return batch
        while worker.queue and self._mergeable(worker.queue[0]):
            batch.append(worker.queue.pop(0))
        return batch

    async def drain(self, timeout: float) -> bool:  # noqa: ASYNC109 - a grace period, not I/O
        """Stop accepting work and wait up to ``timeout`` for running batches to finish.

        Queued but unstarted items are dropped (they stay recorded as pending for the next
        start). Returns True when everything running finished in time.
        """
        self._closed = True
        running = [w.running for w in self._workers.values() if w.running and not w.running.done()]
        for worker in self._workers.values():
            worker.queue.clear()
        self._settled.set()
        finished = True
        if running:
            _, late = await asyncio.wait(running, timeout=timeout)
            finished = not late
        await self.close()
        return finished

    async def close(self) -> None:
        """Cancel every worker and whatever it is running."""
        self._closed = True
        tasks = [w.task for w in self._workers.values() if w.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers.clear()
        self._settled.set()
