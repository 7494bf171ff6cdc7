"""When a job runs: pure functions over time zones and cron expressions.

Times are stored in UTC; a recurring job's expression is read in its owner's time zone
(``zoneinfo``), so "0 7 * * *" in Europe/Berlin is 07:00 local on both sides of a
daylight-saving change. A one-shot job's time is an ISO time the model computed (local to the
user's zone when it carries no offset) or a delay in seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

CRON_FIELDS = 5
"""Minute, hour, day of month, month, day of week: no seconds, no years."""


class JobTimeError(ValueError):
    """A time, delay, cron expression or time zone that cannot be used (the text says why)."""


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``Europe/Berlin``); JobTimeError when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise JobTimeError(f"unknown time zone {name!r} (use a name like Europe/Berlin)") from exc


def check_cron(expression: str) -> str:
    """The expression, normalised, if it is a valid 5-field cron expression."""
    normalised = " ".join(expression.split())
    if len(normalised.split(" ")) != CRON_FIELDS or not croniter.is_valid(normalised):
        raise JobTimeError(f"{expression!r} is not a 5-field cron expression")
    return normalised


def next_cron_time(expression: str, time_zone: str, after: datetime) -> datetime:
    """The first time (UTC) after ``after`` the expression matches, read in ``time_zone``."""
    local = after.astimezone(zone(time_zone))
    following: datetime = croniter(check_cron(expression), local).get_next(datetime)
    return following.astimezone(UTC)


def one_shot_time(
    at: str | None, delay_seconds: float | None, time_zone: str, now: datetime
) -> datetime:
    """A one-shot job's time (UTC): ``delay_seconds`` from ``now``, or the ISO time ``at``
    (in ``time_zone`` when it names no offset). JobTimeError when neither or a past time."""
    if delay_seconds is not None:
        if delay_seconds <= 0:
            raise JobTimeError("the delay must be positive")
        return now + timedelta(seconds=delay_seconds)
    if not at:
        raise JobTimeError("give either 'at' (an ISO time) or 'delay_seconds'")
    try:
        when = datetime.fromisoformat(at)
    except ValueError as exc:
        raise JobTimeError(f"{at!r} is not an ISO time like 2026-12-06T07:00") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone(time_zone))
    when = when.astimezone(UTC)
    if when <= now:
        raise JobTimeError(f"{at} is in the past (it is now {local_text(now, time_zone)})")
    return when


def local_text(when: datetime, time_zone: str) -> str:
    """A time as its owner reads it: ``2026-12-06 07:00 (Europe/Berlin)``."""
    return f"{when.astimezone(zone(time_zone)):%Y-%m-%d %H:%M} ({time_zone})"
