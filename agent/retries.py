"""The one retry policy of the project, built on tenacity: the pieces every retried call uses.

A retried call is :func:`retried` with a stop (how many attempts, or until when), a wait
(what pause before the next attempt) and a predicate (which failures are worth one). The
pieces named here are those tenacity lacks or that several callers share: a doubling backoff,
a wait that honours the platform's ``retry_after``, fixed delays read from the configuration,
a deadline on an injected clock, and the ``transient`` flag failures carry. The attempts and
times of every call kind are in the retry table of ``docs/architecture.md``.

Here, below both the agent and the gateway, so that each may use it (the agent imports nothing
of the gateway).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    after_nothing,
    retry_if_exception,
    wait_chain,
    wait_exponential,
    wait_fixed,
    wait_none,
)
from tenacity.retry import retry_base
from tenacity.stop import stop_base
from tenacity.wait import wait_base

T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[Any]]
RetryHook = Callable[[RetryCallState], None]

DOUBLING = 2
"""Each pause of a backoff is twice the one before: a blip costs little, an outage few calls."""


def is_transient(failure: BaseException) -> bool:
    """Whether a failure says another attempt may succeed: its ``transient`` attribute (set by
    the layer that knows the platform, e.g. ``MediaUnavailable``); absent means no."""
    return bool(getattr(failure, "transient", False))


retry_if_transient = retry_if_exception(is_transient)
"""Retry the failures that call themselves transient (see :func:`is_transient`)."""


def doubling(first: float, most: float = math.inf) -> wait_base:
    """Pauses of ``first``, twice that, four times... never longer than ``most`` seconds."""
    return wait_exponential(multiplier=first, max=most, exp_base=DOUBLING)


def fixed_delays(delays: Sequence[float]) -> wait_base:
    """The given pauses in turn (the n-th after the n-th failure); pair it with
    ``stop_after_attempt(len(delays) + 1)``."""
    if not delays:
        return wait_none()  # tenacity's chain of no waits fails instead of waiting nothing
    return wait_chain(*(wait_fixed(delay) for delay in delays))


class wait_retry_after(wait_base):
    """The pause the failure asks for (its ``retry_after``, e.g. a 429's), else ``backoff``'s.

    The backoff keeps counting failures meanwhile: a pause after a ``retry_after`` is as long
    as if every pause before it had been the backoff's.
    """

    def __init__(self, backoff: wait_base) -> None:
        self.backoff = backoff

    def __call__(self, retry_state: RetryCallState) -> float:
        asked = getattr(last_failure(retry_state), "retry_after", None)
        return float(asked) if asked is not None else self.backoff(retry_state)


class stop_at_deadline(stop_base):
    """Give up rather than pause past ``seconds`` after the first failure, on ``clock``.

    Unlike tenacity's ``stop_after_delay`` the clock is injected (tests move time themselves)
    and the pause about to start counts: no attempt is made after the deadline. Tracks one
    retried call at a time: build one per call.
    """

    def __init__(self, seconds: float, clock: Clock = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._deadline = math.inf

    def __call__(self, retry_state: RetryCallState) -> bool:
        now = self.clock()
        if retry_state.attempt_number == 1:
            self._deadline = now + self.seconds
        upcoming = retry_state.upcoming_sleep  # tenacity computes the wait before the stop
        return now + upcoming > self._deadline


def last_failure(retry_state: RetryCallState) -> BaseException:
    """The exception of the attempt that just failed (for hooks and waits, which run only
    after a failure)."""
    outcome = retry_state.outcome
    failure = outcome.exception() if outcome is not None else None
    if failure is None:
        raise RuntimeError("no failed attempt to look at")
    return failure


def nth_wait(wait: wait_base, failures: int) -> float:
    """The pause ``wait`` gives after ``failures`` failures in a row, for a loop that never
    ends and counts its failures itself (Telegram's poll loop), so cannot be one retried call."""
    state = RetryCallState(AsyncRetrying(), fn=None, args=(), kwargs={})
    state.attempt_number = failures
    return wait(state)


async def retried(
    call: Callable[[], Awaitable[T]],
    *,
    stop: stop_base,
    wait: wait_base,
    retry: retry_base = retry_if_transient,
    sleep: Sleep = asyncio.sleep,
    after: RetryHook = after_nothing,
    before_sleep: RetryHook | None = None,
) -> T:
    """``call()`` until it returns, retrying the failures ``retry`` accepts.

    Raises the last failure itself (never tenacity's ``RetryError``): one ``retry`` refused,
    or the one after which ``stop`` gave up. ``after`` is told of every failure about to be
    retried (before the stop is asked), ``before_sleep`` of every pause about to start
    (``retry_state.upcoming_sleep``). ``sleep`` is injected by tests.
    """
    retrying = AsyncRetrying(
        stop=stop,
        wait=wait,
        retry=retry,
        sleep=sleep,
        after=after,
        before_sleep=before_sleep,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity returns or raises")
