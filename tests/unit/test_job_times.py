"""When jobs run: cron in the owner's time zone across daylight saving, one-shot times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.jobs.times import JobTimeError, check_cron, next_cron_time, one_shot_time

BERLIN = "Europe/Berlin"
NOW = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)
"""Two days before Europe's spring change (Sunday 29 March 2026, 02:00 -> 03:00 local)."""


def test_a_daily_cron_job_fires_at_seven_local_on_both_sides_of_a_dst_change() -> None:
    times = [NOW]
    for _ in range(3):
        times.append(next_cron_time("0 7 * * *", BERLIN, times[-1]))
    assert times[1:] == [
        datetime(2026, 3, 28, 6, 0, tzinfo=UTC),  # 07:00 CET
        datetime(2026, 3, 29, 5, 0, tzinfo=UTC),  # 07:00 CEST
        datetime(2026, 3, 30, 5, 0, tzinfo=UTC),
    ]


def test_the_autumn_change_moves_utc_back_an_hour() -> None:
    october = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    first = next_cron_time("0 7 * * *", BERLIN, october)
    assert (first, next_cron_time("0 7 * * *", BERLIN, first)) == (
        datetime(2026, 10, 25, 6, 0, tzinfo=UTC),
        datetime(2026, 10, 26, 6, 0, tzinfo=UTC),
    )


def test_a_delay_counts_from_now_to_the_second() -> None:
    assert one_shot_time(None, 120, BERLIN, NOW) == NOW + timedelta(seconds=120)


def test_an_iso_time_without_offset_is_read_in_the_users_zone() -> None:
    assert one_shot_time("2026-03-28T07:00", None, BERLIN, NOW) == datetime(
        2026, 3, 28, 6, 0, tzinfo=UTC
    )
    assert one_shot_time("2026-03-28T07:00+00:00", None, BERLIN, NOW) == datetime(
        2026, 3, 28, 7, 0, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("at", "delay"), [("2026-03-27T12:00", None), ("tomorrow", None), (None, -5), (None, None)]
)
def test_past_or_unreadable_one_shot_times_are_refused(at: str | None, delay: float | None) -> None:
    with pytest.raises(JobTimeError):
        one_shot_time(at, delay, BERLIN, NOW)


@pytest.mark.parametrize("expression", ["* * * *", "0 7 * * * *", "61 7 * * *", "every day"])
def test_only_five_field_cron_expressions_are_accepted(expression: str) -> None:
    with pytest.raises(JobTimeError):
        check_cron(expression)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(JobTimeError):
        next_cron_time("0 7 * * *", "Mars/Olympus", NOW)
