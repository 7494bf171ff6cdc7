"""Scheduled jobs in the store: a run is claimed once, whoever races for it; per-user lists."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from agent.tools import ToolRegistry
from gateway.config.schema import JobsSettings
from gateway.jobs.board import JobBoard
from gateway.jobs.schedule_tool import JobOrigin, schedule_tool
from gateway.store.job_records import NewJob, job_run_id
from gateway.store.repository import Repository
from gateway.store.repository_jobs import TooManyJobsError

DUE = datetime(2026, 12, 5, 7, 0, tzinfo=UTC)
JOB = NewJob(
    "telegram", "42", "42", None, "private", "telegram:42", "Remind me to stretch",
    "once", None, "UTC", DUE,
)  # fmt: skip


def run_row(job_id: int, run: int) -> dict[str, object]:
    return {
        "platform": "telegram",
        "platform_message_id": job_run_id(job_id, run),
        "session_key": f"telegram:42#job{job_id}",
        "chat_id": "42",
        "user_id": "42",
        "text": "Remind me to stretch",
        "payload": {},
    }


async def test_a_due_run_is_claimed_once_and_recorded_as_an_inbound_message(
    any_repo: Repository,
) -> None:
    job = await any_repo.add_job(JOB, max_per_user=5)
    assert await any_repo.next_job_time(["telegram"]) == DUE
    assert await any_repo.due_jobs(DUE - timedelta(seconds=1), ["telegram"]) == []
    [due] = await any_repo.due_jobs(DUE, ["telegram"])
    claims = await asyncio.gather(
        *(any_repo.claim_job(due, next_run_at=None, run=run_row(job.id, 1)) for _ in range(5))
    )
    assert claims.count(True) == 1
    assert [r.platform_message_id for r in await any_repo.pending_inbound("telegram")] == [
        job_run_id(job.id, 1)
    ]
    assert await any_repo.due_jobs(DUE + timedelta(days=1), ["telegram"]) == []
    assert await any_repo.next_job_time(["telegram"]) is None


async def test_a_recurring_run_moves_the_job_to_its_next_time(any_repo: Repository) -> None:
    job = await any_repo.add_job(replace(JOB, kind="cron", cron="0 7 * * *"), max_per_user=5)
    following = DUE + timedelta(days=1)
    assert await any_repo.claim_job(job, next_run_at=following, run=run_row(job.id, 1))
    assert not await any_repo.claim_job(job, next_run_at=following, run=run_row(job.id, 1))
    [pending] = await any_repo.pending_jobs("telegram", "42")
    assert (pending.next_run_at, pending.runs) == (following, 1)


async def test_jobs_are_listed_and_cancelled_only_by_their_owner(any_repo: Repository) -> None:
    job = await any_repo.add_job(JOB, max_per_user=2)
    await any_repo.add_job(replace(JOB, next_run_at=DUE - timedelta(hours=1)), max_per_user=2)
    with pytest.raises(TooManyJobsError):
        await any_repo.add_job(JOB, max_per_user=2)
    assert not await any_repo.cancel_job("telegram", "7", job.id)
    assert await any_repo.cancel_job("telegram", "42", job.id)
    assert not await any_repo.claim_job(job, next_run_at=None, run=run_row(job.id, 1))
    [left] = await any_repo.pending_jobs("telegram", "42")
    assert left.next_run_at == DUE - timedelta(hours=1)
    assert await any_repo.pending_jobs("telegram", "7") == []


async def test_a_users_time_zone_is_utc_until_set(any_repo: Repository) -> None:
    assert await any_repo.time_zone("telegram", "42") is None
    await any_repo.set_time_zone("telegram", "42", "Europe/Berlin")
    await any_repo.set_time_zone("telegram", "42", "Asia/Tokyo")
    assert await any_repo.time_zone("telegram", "42") == "Asia/Tokyo"
    assert await any_repo.time_zone("telegram", "7") is None


class StandingClock:
    """The jobs' clock held at one instant."""

    def __init__(self, now: datetime) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    async def sleep_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        await wake.wait()


ORIGIN = JobOrigin("telegram", "42", "42", None, "private", "telegram:42#job7")


async def test_the_schedule_tool_reads_times_in_the_users_zone_and_explains_refusals(
    repo: Repository,
) -> None:
    board = JobBoard(repo, JobsSettings(max_per_user=2), StandingClock(DUE))
    tools = ToolRegistry([schedule_tool(board, lambda: ORIGIN)])
    await repo.set_time_zone("telegram", "42", "Europe/Berlin")
    daily = await tools.call("schedule", {"prompt": "News", "cron": "0 7 * * *"})
    once = await tools.call("schedule", {"prompt": "Tea", "at": "2026-12-05T09:00"})
    refusals = [
        await tools.call("schedule", args)
        for args in (
            {"prompt": "x", "cron": "every day"},
            {"prompt": "x", "at": "2026-12-05T07:59"},
            {"prompt": "", "delay_seconds": 5},
            {"prompt": "x", "delay_seconds": 5},
        )
    ]
    jobs = await repo.pending_jobs("telegram", "42")
    assert board.changed.is_set()
    assert "first run 2026-12-06 07:00 (Europe/Berlin), then on '0 7 * * *'" in daily
    assert "first run 2026-12-05 09:00 (Europe/Berlin)." in once
    assert [job.next_run_at for job in jobs] == [
        DUE + timedelta(hours=1),
        DUE + timedelta(hours=23),
    ]
    assert {job.session_key for job in jobs} == {"telegram:42"}  # the chat's, not the job's
    assert all(r.startswith("Error: ") for r in refusals)
    assert "not a 5-field cron expression" in refusals[0]
    assert "is in the past" in refusals[1]
    assert "missing 'prompt'" in refusals[2]
    assert "/jobs cancel N" in refusals[3]
