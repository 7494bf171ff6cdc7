"""Discord's ids and timestamps: snowflakes carrying their creation time, ISO 8601 times."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

DISCORD_EPOCH_MS = 1_420_070_400_000
SNOWFLAKE_TIMESTAMP_SHIFT = 22


def iso_now() -> str:
    """The current time as Discord writes timestamps."""
    return datetime.now(UTC).isoformat()


def iso_at(moment: float) -> str:
    """An epoch time as Discord writes timestamps."""
    return datetime.fromtimestamp(moment, UTC).isoformat()


def _snowflake_base(moment_ms: int) -> int:
    return (moment_ms - DISCORD_EPOCH_MS) << SNOWFLAKE_TIMESTAMP_SHIFT


class SnowflakeFactory:
    """Makes unique snowflakes whose timestamp part is the creation time.

    `next` stamps the real time and is increasing; `at` stamps a given time (a replayed
    transcript's), so ids made with it follow those times, not the order they were made in.
    """

    def __init__(self) -> None:
        self._last = 0
        self._stamped: set[int] = set()
        self._lock = threading.Lock()

    def next(self) -> int:
        """A fresh snowflake, larger than every one `next` made before."""
        with self._lock:
            candidate = max(_snowflake_base(int(time.time() * 1000)), self._last + 1)
            while candidate in self._stamped:
                candidate += 1
            self._last = candidate
            return candidate

    def at(self, moment: float) -> int:
        """A fresh snowflake whose timestamp part is ``moment`` (epoch seconds)."""
        with self._lock:
            candidate = _snowflake_base(int(moment * 1000))
            while candidate in self._stamped or candidate == self._last:
                candidate += 1
            self._stamped.add(candidate)
            return candidate
