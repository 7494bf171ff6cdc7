"""A clock that only moves when told to, so time-dependent behaviour (cache TTLs) is testable."""

from __future__ import annotations


class ManualClock:
    """Seconds on a clock that stands still until `advance` or `advance_to` is called.

    The emulators read time from here instead of the wall clock, so a test can expire a
    five-minute cache entry by calling ``advance(301)`` rather than by waiting, and a replay
    can follow a transcript's own times with ``advance_to(message_time)``.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        """The current time in seconds."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``; time never runs backwards."""
        if seconds < 0:
            raise ValueError(f"cannot move the clock backwards ({seconds} s)")
        self._now += float(seconds)

    def advance_to(self, moment: float) -> None:
        """Move the clock forward to ``moment`` (e.g. an epoch time); standing still is allowed,
        going back raises ValueError."""
        if moment < self._now:
            raise ValueError(f"cannot move the clock back from {self._now} to {moment}")
        self._now = float(moment)
