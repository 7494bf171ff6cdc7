"""The gateway's memory and CPU over a load run, sampled against messages answered.

A daemon that keeps something per message grows in a straight line with the messages it
handled; one that does not is flat once its caches are warm. :class:`RssSampler` reads this
process's RSS (``/proc/self/statm``) and a count of answered messages at a fixed interval;
:func:`rss_slope` fits a line through the samples after the warm-up and gives its slope in MB
per 1,000 messages. :func:`cpu_ms_after_warmup` is the process's CPU time per message over
the same stretch: the steady state, without start-up work such as the model SDK's first import.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SAMPLE_INTERVAL_SECONDS = 0.5
"""How often RSS is read: a few hundred samples over a run of minutes, at no measurable cost."""
WARMUP_FRACTION = 0.25
"""The first quarter of the messages is warm-up (sessions loaded, histories reaching their
bound, allocator arenas filled); the slope is fitted over the rest."""
BYTES_PER_MB = 1_000_000
MESSAGES_PER_SLOPE_UNIT = 1000
MIN_SLOPE_SAMPLES = 3
_STATM = "/proc/self/statm"


def rss_bytes() -> int:
    """This process's resident set size now (0 where ``/proc`` is missing)."""
    try:
        with open(_STATM, encoding="ascii") as statm:
            resident_pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True, slots=True)
class RssSample:
    """RSS and CPU time used so far (all threads) after ``answered`` messages."""

    answered: int
    rss_bytes: int
    cpu_seconds: float = 0.0


@dataclass
class RssSampler:
    """Samples RSS against ``answered()`` until :meth:`stop`; the samples stay in order."""

    answered: Callable[[], int]
    interval_seconds: float = SAMPLE_INTERVAL_SECONDS
    samples: list[RssSample] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin sampling in a task of the running loop."""
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Take a last sample and end the task."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self.sample()

    def sample(self) -> None:
        """Record one sample now."""
        self.samples.append(RssSample(self.answered(), rss_bytes(), time.process_time()))

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(self.interval_seconds)


def rss_slope(samples: list[RssSample], expected: int) -> float | None:
    """RSS growth in MB per 1,000 messages after the warm-up (least squares); None when too
    few samples fall after it to fit a line."""
    start = expected * WARMUP_FRACTION
    after = [s for s in samples if s.answered >= start]
    if len(after) < MIN_SLOPE_SAMPLES or len({s.answered for s in after}) < 2:
        return None
    fitted = statistics.linear_regression(
        [s.answered for s in after], [s.rss_bytes / BYTES_PER_MB for s in after]
    )
    return fitted.slope * MESSAGES_PER_SLOPE_UNIT


def rss_at_warmup(samples: list[RssSample], expected: int) -> float:
    """RSS in MB at the first sample after the warm-up (0 when there is none)."""
    start = expected * WARMUP_FRACTION
    after = [s for s in samples if s.answered >= start]
    return after[0].rss_bytes / BYTES_PER_MB if after else 0.0


def cpu_ms_after_warmup(samples: list[RssSample], expected: int) -> float | None:
    """CPU milliseconds per message answered after the warm-up (None: too few samples)."""
    start = expected * WARMUP_FRACTION
    after = [s for s in samples if s.answered >= start]
    if len(after) < 2 or after[-1].answered == after[0].answered:
        return None
    spent = after[-1].cpu_seconds - after[0].cpu_seconds
    return spent * 1000 / (after[-1].answered - after[0].answered)
