"""When the daemon is idle: nothing left to do with what it has received.

Tests, the demo and the benchmarks wait for it (:meth:`gateway.runtime.gateway.Gateway.wait_idle`)
before they assert that nothing more happened. It knows nothing of updates a platform has not
handed over yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from gateway.delivery.in_flight import InFlight
from gateway.platforms.base import PlatformAdapter
from gateway.runtime.turns import TurnRunner
from gateway.store.ports import LifecycleStore

UNSETTLED_RECHECK_SECONDS = 0.02
"""How often :meth:`IdleWatch.wait` reads the inbound table again while, with nothing else
running, a message is still unfinished there (no event says when a row changes)."""


class IdleWatch:
    """Waits for the daemon's parts to have nothing in progress, in memory and in the store."""

    def __init__(
        self,
        receiving: InFlight,
        turns: TurnRunner,
        delivering: InFlight,
        adapters: Mapping[str, PlatformAdapter],
        repo: LifecycleStore,
    ) -> None:
        self._receiving = receiving
        self._turns = turns
        self._delivering = delivering
        self._adapters = adapters
        self._repo = repo

    async def wait(self, timeout: float) -> None:  # noqa: ASYNC109
        """Return once nothing is left to do, all at once: no message being recorded, no
        session with work queued or a batch running, no reply being delivered, no task of the
        turn runner's own (an immediate command) running, and no message of a running adapter
        unfinished in the inbound table. Raises TimeoutError after ``timeout`` seconds busy."""
        async with asyncio.timeout(timeout):
            while True:
                await self._receiving.wait_none()
                await self._turns.workers.wait_idle()
                await self._delivering.wait_none()
                running = {task for task in self._turns.background if not task.done()}
                if running:
                    await asyncio.wait(running)
                if self._busy():
                    continue
                unsettled = await self._any_unsettled_inbound()
                if self._busy():
                    continue  # something started while the table was read: look again
                if not unsettled:
                    return
                await asyncio.sleep(UNSETTLED_RECHECK_SECONDS)

    def _busy(self) -> bool:
        """Whether anything runs now (the in-memory half of :meth:`wait`)."""
        return self._receiving.count > 0 or self._turns.busy() or self._delivering.count > 0

    async def _any_unsettled_inbound(self) -> bool:
        """Whether a running adapter has a message recorded but not finished (pending or
        processing); the first adapter that has one ends the reading."""
        for name, adapter in self._adapters.items():
            # A stopped adapter's messages wait for the next start.
            if adapter.failure is None and await self._repo.pending_inbound(name):
                return True
        return False
