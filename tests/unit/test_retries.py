"""The shared retry policy's pieces (agent.retries): pure logic on an injected clock."""

from __future__ import annotations

import pytest
from tenacity import retry_if_exception_type, stop_after_attempt

from agent.retries import (
    doubling,
    fixed_delays,
    nth_wait,
    retried,
    stop_at_deadline,
    wait_retry_after,
)
from tests.fixtures.fake_time import FakeTime


class Busy(Exception):
    """A transient failure, optionally with the wait the platform asked for."""

    transient = True

    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("busy")
        self.retry_after = retry_after


def failing(*errors: Exception):
    remaining = list(errors)

    async def call() -> str:
        if remaining:
            raise remaining.pop(0)
        return "done"

    return call


async def test_a_deadline_counts_from_the_first_failure_and_stops_before_a_pause_past_it() -> None:
    time = FakeTime()
    time.now = 1000.0  # the deadline is relative to the first failure, not to zero
    with pytest.raises(Busy):
        await retried(
            failing(*(Busy() for _ in range(20))),
            stop=stop_at_deadline(10.0, time.clock),
            wait=doubling(1.0),
            sleep=time.sleep,
        )
    assert time.waits == [1.0, 2.0, 4.0]  # a pause of 8 s would end at 15 s


async def test_the_failures_retry_after_is_the_wait_and_the_backoff_keeps_counting() -> None:
    time = FakeTime()
    result = await retried(
        failing(Busy(), Busy(retry_after=7), Busy()),
        stop=stop_after_attempt(10),
        wait=wait_retry_after(doubling(1.0, 30.0)),
        sleep=time.sleep,
    )
    assert result == "done"
    assert time.waits == [1.0, 7.0, 4.0]


async def test_no_configured_delays_is_one_attempt_and_the_failure_itself() -> None:
    time = FakeTime()
    with pytest.raises(Busy):
        await retried(
            failing(Busy()),
            stop=stop_after_attempt(1),
            wait=fixed_delays(()),
            sleep=time.sleep,
        )
    assert time.waits == []


async def test_a_failure_the_predicate_refuses_is_raised_at_once() -> None:
    time = FakeTime()
    with pytest.raises(KeyError):
        await retried(
            failing(KeyError("gone")),
            stop=stop_after_attempt(5),
            wait=fixed_delays((2.0, 8.0)),
            retry=retry_if_exception_type(Busy),
            sleep=time.sleep,
        )
    assert time.waits == []


def test_a_never_ending_loops_pause_stays_at_its_cap_after_thousands_of_failures() -> None:
    pauses = doubling(0.5, 10.0)
    assert [nth_wait(pauses, n) for n in (1, 2, 3, 6)] == [0.5, 1.0, 2.0, 10.0]
    assert nth_wait(pauses, 5000) == 10.0
