"""Counting operations in progress, so that a caller can wait until none is.

The gateway's idle wait (:meth:`gateway.runtime.gateway.Gateway.wait_idle`) is built on these
counts: a receive being recorded, a reply being delivered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager


class InFlight:
    """How many operations of one kind are in progress; :meth:`wait_none` waits for none."""

    def __init__(self) -> None:
        self._count = 0
        self._none = asyncio.Event()
        self._none.set()

    @property
    def count(self) -> int:
        """Operations in progress now."""
        return self._count

    @contextmanager
    def track(self) -> Iterator[None]:
        """Count the enclosed operation as in progress until it ends, however it ends."""
        self._count += 1
        self._none.clear()
        try:
            yield
        finally:
            self._count -= 1
            if self._count == 0:
                self._none.set()

    async def wait_none(self) -> None:
        """Return once no operation is in progress (at once when none is)."""
        await self._none.wait()
