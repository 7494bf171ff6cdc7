"""Group commit: every write of every session goes through one writer, many per transaction.

A chat gateway writes a little and often: each message received, each message stored, each
API call's usage, each reply id is its own small write, from a hundred sessions at once. One
transaction per write made the commit (and the driver's per-transaction overhead) the
gateway's bottleneck, with the single-writer lock held nearly all the time. Here a write is a
*job*: a plain function of a synchronous SQLAlchemy :class:`~sqlalchemy.engine.Connection`.
Callers queue jobs; one writer task takes everything queued, runs it in one transaction and
commits once, then hands each caller its own result.

Jobs must be self-contained: all their effects are in the database (no changes to the
caller's objects; callers apply results after :meth:`BatchWriter.run` returns), so that a
batch can be replayed. When any job of a batch raises, the whole batch is rolled back and its
jobs are run again one transaction each: the failing job gets its error, the others commit
as if they had been alone. A job therefore sees exactly the isolation it would have had with
a transaction of its own.

On SQLite the batch runs on a dedicated thread with a synchronous pysqlite connection: a
statement costs tens of microseconds there instead of a round trip through the event loop
and aiosqlite's thread per statement. On PostgreSQL (and in-memory SQLite, which only the
async engine's connection can see) it runs through the async engine's ``run_sync``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

T = TypeVar("T")

WriteJob = Callable[[Connection], T]
"""A write: runs inside a transaction on the given connection and returns its result."""

WriteFence = Callable[[Connection], None]
"""A check run first in every batch's transaction (failover: the leader's epoch is still the
lease's, :class:`gateway.store.leases.LeaseFence`); when it raises, every job of the batch
fails with its error and none is run."""

MAX_JOBS_PER_BATCH = 512
"""Upper bound on the writes committed together (bounds the work a rollback would redo)."""


@dataclass(eq=False)
class _Queued(Generic[T]):
    job: WriteJob[T]
    future: asyncio.Future[T]
    started: bool = False


@dataclass
class WriterStats:
    """What the writer has done so far: how well writes were grouped (the load bench reports it)."""

    jobs: int = 0
    batches: int = 0
    replayed_batches: int = 0
    largest_batch: int = 0


@dataclass(eq=False)
class BatchWriter:
    """Runs write jobs in group commits, one batch at a time, under the store's write lock.

    ``sync_engine`` (SQLite files) gives the writer its own connection on its own thread;
    without it, batches run on a connection of ``engine`` through ``run_sync``.
    """

    engine: AsyncEngine
    write_lock: asyncio.Lock
    sync_engine: Engine | None = None
    fence: WriteFence | None = None
    stats: WriterStats = field(default_factory=WriterStats)
    _queue: deque[_Queued[Any]] = field(default_factory=deque)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    _thread: concurrent.futures.ThreadPoolExecutor | None = None
    _connection: Connection | None = None
    _closed: bool = False

    async def run(self, job: WriteJob[T]) -> T:
        """Run ``job`` in the next group commit and return its result (or raise its error).

        Cancelling the caller before the job started withdraws it; once it started, the
        caller waits for the commit (so its effects are settled either way) and is then
        cancelled.
        """
        if self._closed:
            raise RuntimeError("the store is closed")
        loop = asyncio.get_running_loop()
        queued: _Queued[T] = _Queued(job, loop.create_future())
        self._queue.append(queued)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._write_forever(), name="store-writer")
        try:
            return await asyncio.shield(queued.future)
        except asyncio.CancelledError:
            if not queued.started:
                with contextlib.suppress(ValueError):
                    self._queue.remove(queued)
                raise
            # Already in a transaction: let it settle, so the caller's caller can rely on the
            # store (e.g. reload a context after /stop), then pass the cancellation on.
            with contextlib.suppress(Exception):
                await asyncio.wait({queued.future})
                if not queued.future.cancelled():
                    queued.future.exception()  # retrieved: the cancellation is what we report
            raise

    async def close(self) -> None:
        """Finish what is queued, then stop the writer and release its connection."""
        self._closed = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if self._thread is not None:
            if self._connection is not None:
                connection, self._connection = self._connection, None
                await asyncio.get_running_loop().run_in_executor(self._thread, connection.close)
            self._thread.shutdown(wait=True)
            self._thread = None
        if self.sync_engine is not None:
            self.sync_engine.dispose()

    async def _write_forever(self) -> None:
        while True:
            while not self._queue:
                if self._closed:
                    return
                self._wake.clear()
                await self._wake.wait()
            async with self.write_lock:
                batch = self._take_batch()
                if batch:
                    await self._commit(batch)

    def _take_batch(self) -> list[_Queued[Any]]:
        batch: list[_Queued[Any]] = []
        while self._queue and len(batch) < MAX_JOBS_PER_BATCH:
            queued = self._queue.popleft()
            if queued.future.done():  # the caller went away before it started
                continue
            queued.started = True
            batch.append(queued)
        return batch

    async def _commit(self, batch: list[_Queued[Any]]) -> None:
        jobs = [queued.job for queued in batch]
        try:
            outcomes, replayed = await self._run_batch(jobs)
        except Exception as exc:  # the connection itself failed: every caller learns why
            log.error("store writer: a batch of %d write(s) failed: %s", len(jobs), exc)
            outcomes, replayed = [(False, exc)] * len(jobs), False
        self.stats.jobs += len(jobs)
        self.stats.batches += 1
        self.stats.replayed_batches += int(replayed)
        self.stats.largest_batch = max(self.stats.largest_batch, len(jobs))
        for queued, (ok, value) in zip(batch, outcomes, strict=True):
            if queued.future.done():
                continue
            if ok:
                queued.future.set_result(value)
            else:
                queued.future.set_exception(value)

    async def _run_batch(self, jobs: list[WriteJob[Any]]) -> tuple[list[tuple[bool, Any]], bool]:
        if self.sync_engine is not None:
            loop = asyncio.get_running_loop()
            if self._thread is None:
                # One thread, one connection: pysqlite connections stay on the thread that
                # opened them, and one writer never needs more.
                self._thread = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="store-writer"
                )
            return await loop.run_in_executor(self._thread, self._run_on_own_connection, jobs)
        async with self.engine.connect() as connection:
            return await connection.run_sync(run_jobs, jobs, self.fence)

    def _run_on_own_connection(
        self, jobs: list[WriteJob[Any]]
    ) -> tuple[list[tuple[bool, Any]], bool]:
        assert self.sync_engine is not None
        if self._connection is None or self._connection.closed:
            self._connection = self.sync_engine.connect()
        try:
            return run_jobs(self._connection, jobs, self.fence)
        except Exception:
            # A broken connection is replaced on the next batch rather than reused.
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None
            raise


class _FenceRefused(Exception):
    def __init__(self, error: Exception) -> None:
        self.error = error


def run_jobs(
    connection: Connection, jobs: list[WriteJob[Any]], fence: WriteFence | None = None
) -> tuple[list[tuple[bool, Any]], bool]:
    """Run ``jobs`` in one transaction; on any error, again one transaction per job.

    Returns ``(ok, result or error)`` per job and whether the batch had to be replayed.
    ``fence`` runs first; when it refuses, every job fails with its error, none replayed.
    """
    results: list[Any] = []
    try:
        with connection.begin():
            _check_fence(connection, fence)
            for job in jobs:
                results.append(job(connection))
    except _FenceRefused as refused:
        return [(False, refused.error)] * len(jobs), False
    except Exception as exc:
        if len(jobs) == 1:
            return [(False, exc)], False
    else:
        return [(True, result) for result in results], False
    outcomes: list[tuple[bool, Any]] = []
    for job in jobs:
        try:
            with connection.begin():
                _check_fence(connection, fence)
                outcomes.append((True, job(connection)))
        except _FenceRefused as refused:
            outcomes.append((False, refused.error))
        except Exception as exc:
            outcomes.append((False, exc))
    return outcomes, True


def _check_fence(connection: Connection, fence: WriteFence | None) -> None:
    if fence is None:
        return
    try:
        fence(connection)
    except Exception as exc:
        raise _FenceRefused(exc) from exc
