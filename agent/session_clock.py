"""A session's time as its messages tell it, so a replayed transcript decides as the live run did.

Every time-based decision about a session (is its prompt cache still warm? is the summary model
still in cooldown?) reads this clock instead of the wall clock. Its time is the newest platform
time seen on the session's messages (Telegram ``date``, Discord ``created_at``) plus the time
elapsed since that message was seen. A replay that stamps messages with their original times
therefore sees the same gaps as the live run; between messages the clock still advances, so a
session left alone goes cold in the background too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from agent.types import Message

SENT_AT_KEY = "_sent_at"
"""Bookkeeping key of a message dict holding its platform time (epoch seconds)."""


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
    ) -> None:
        self._monotonic = monotonic
        self._fallback = fallback
        self._newest: float | None = None
        self._seen_at = 0.0
        self.observe(newest)

    @classmethod
    def from_messages(
        cls, messages: Iterable[Message], **kwargs: Callable[[], float]
    ) -> SessionClock:
        """A clock set to the newest ``"_sent_at"`` among ``messages`` (none: not set)."""
        return cls(newest_sent_at(messages), **kwargs)

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


def newest_sent_at(messages: Iterable[Message]) -> float | None:
    """The newest platform time among ``messages``, None when none has one."""
    times = [float(m[SENT_AT_KEY]) for m in messages if m.get(SENT_AT_KEY) is not None]
    return max(times) if times else None
