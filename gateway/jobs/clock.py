"""The scheduler's clock, injected so that tests move time instead of sleeping."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Protocol

LONGEST_SLEEP_SECONDS = 900.0
"""The longest the scheduler sleeps at once: the event loop's clock is monotonic, so a wall
clock that jumps (a suspended machine, a corrected time) is noticed within this. One store read,
no model call."""


class JobClock(Protocol):
    """What the scheduler and the ``schedule`` tool need of time."""

    def now(self) -> datetime:
        """The current time, UTC."""

    async def sleep_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        """Return at ``when`` (None: never by itself) or as soon as ``wake`` is set."""


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        seconds = LONGEST_SLEEP_SECONDS
        if when is not None:
            seconds = min(seconds, (when - self.now()).total_seconds())
        if seconds <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await wake.wait()
