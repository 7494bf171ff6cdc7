"""A session's time as its messages tell it, so a replayed transcript decides as the live run did.

Every time-based decision about a session (is its prompt cache still warm? is the summary model
still in cooldown?) reads this clock instead of the wall clock. Its time is the newest platform
time seen on the session's messages (Telegram ``date``, Discord ``created_at``) plus the time
elapsed since that message was seen. A replay that stamps messages with their original times
therefore sees the same gaps as the live run; between messages the clock still advances, so a
session left alone goes cold in the background too.

The elapsed part is only ever a *trigger*: a background task sleeps until the clock reaches an
instant fixed by message times (the idle point of :mod:`agent.policy.scheduler`), and what
it then decides is computed from that instant, never from the clock's reading.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Final

from agent.types import Message

SENT_AT_KEY: Final = "_sent_at"
"""Bookkeeping key of a message dict holding its platform time (epoch seconds)."""

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ElapsedTime:
    """Where session clocks measure the time between messages: the process's monotonic clock
    and asyncio's sleep (a test steps its own time source through the same two calls)."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Sleep = asyncio.sleep


class SessionClock:
    """Newest platform time seen, advanced by the elapsed time since it was seen.

    ``monotonic`` measures the elapsed part; ``fallback`` is used only while the session has
    never seen a platform time (a terminal chat or rows stored before message times existed).
    """

    def __init__(
        self,
        newest: float | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        fallback: Callable[[], float] = time.time,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._monotonic = monotonic
        self._sleep = sleep
        self._fallback = fallback
        self._newest: float | None = None
        self._seen_at = 0.0
        self.observe(newest)

    @classmethod
    def from_messages(
        cls, messages: Iterable[Message], *, monotonic: Callable[[], float] = time.monotonic
    ) -> SessionClock:
        """A clock set to the newest ``"_sent_at"`` among ``messages`` (none: not set)."""
        return cls(newest_sent_at(messages), monotonic=monotonic)

    @classmethod
    def measured_by(cls, messages: Iterable[Message], elapsed: ElapsedTime) -> SessionClock:
        """A clock set from ``messages`` whose elapsed time (and sleep) come from ``elapsed``."""
        return cls(newest_sent_at(messages), monotonic=elapsed.monotonic, sleep=elapsed.sleep)

    @property
    def newest(self) -> float | None:
        """The newest platform time seen, None before any."""
        return self._newest

    def observe(self, sent_at: float | None) -> None:
        """Take a message's platform time into account (older or missing times change nothing)."""
        if sent_at is None:
            return
        if self._newest is None or sent_at >= self._newest:
            self._newest = float(sent_at)
            self._seen_at = self._monotonic()

    def now(self) -> float:
        """The session's present: newest platform time plus the time elapsed since."""
        if self._newest is None:
            return self._fallback()
        return self._newest + max(0.0, self._monotonic() - self._seen_at)

    async def sleep_until(self, moment: float) -> None:
        """Return once :meth:`now` reads ``moment`` or later (a newer message moving the clock
        forward meanwhile shortens the wait)."""
        while (remaining := moment - self.now()) > 0:
            await self._sleep(remaining)


def newest_sent_at(messages: Iterable[Message]) -> float | None:
    """The newest platform time among ``messages``, None when none has one."""
    times = [float(m[SENT_AT_KEY]) for m in messages if m.get(SENT_AT_KEY) is not None]
    return max(times) if times else None
