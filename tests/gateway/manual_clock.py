"""A clock the test moves: the scheduled jobs' time, injected instead of the machine's."""

from __future__ import annotations

import asyncio
from datetime import datetime

ASLEEP_TIMEOUT_SECONDS = 10.0
"""A guard against hangs: how long :meth:`ManualClock.advance_to` waits for the scheduler."""


class ManualClock:
    """Stands still until the test moves it; a sleeper wakes when its time is reached."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._moved = asyncio.Event()
        self._asleep = asyncio.Event()
        """Set while a sleeper waits for a time not reached yet."""

    def now(self) -> datetime:
        return self._now

    async def sleep_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        while when is None or self._now < when:
            if wake.is_set():
                return
            moved = self._moved
            self._asleep.set()
            waits = {asyncio.ensure_future(moved.wait()), asyncio.ensure_future(wake.wait())}
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()

    def set(self, when: datetime) -> None:
        """Move to ``when`` without waiting for anyone (no scheduler is running)."""
        self._now = when
        self._asleep.clear()
        self._moved.set()
        self._moved = asyncio.Event()

    async def advance_to(self, when: datetime) -> None:
        """Move to ``when`` and return once the scheduler has done what was due and sleeps."""
        self.set(when)
        await asyncio.wait_for(self._asleep.wait(), ASLEEP_TIMEOUT_SECONDS)
