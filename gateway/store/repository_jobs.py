"""Scheduled jobs and users' time zones.

A run is claimed by one conditional update (the job still pending, at the time and run count
the scheduler read) and recorded as an inbound message in the same commit, so it happens once
even when two processes race or one dies right after: the inbound table then resumes it.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, delete, func, insert, select, update

from gateway.store.job_records import (
    JOB_CANCELLED,
    JOB_DISABLED,
    JOB_DONE,
    JOB_PENDING,
    JobRecord,
    NewJob,
)
from gateway.store.repository_base import RepositoryBase, StoreError, rowcount
from gateway.store.repository_inbound import PENDING_STATUS, insert_inbound_unless_seen
from gateway.store.tables import JobRow, UserSettingRow, utcnow

jobs_table = cast(Table, JobRow.__table__)


class TooManyJobsError(StoreError):
    """The user has as many pending jobs as they may."""


def _record(row: JobRow) -> JobRecord:
    return JobRecord(
        row.id,
        row.platform,
        row.user_id,
        row.chat_id,
        row.thread_id,
        row.chat_type,
        row.session_key,
        row.prompt,
        cast(Any, row.kind),
        row.cron,
        row.time_zone,
        row.next_run_at,
        row.status,
        row.own_session,
        row.created_at,
        row.last_run_at,
        row.runs,
        row.username,
    )


def _owned(platform: str, user_id: str) -> list[Any]:
    return [JobRow.platform == platform, JobRow.user_id == user_id]


def delete_users_jobs(connection: Connection, platform: str, user_id: str) -> int:
    """Delete a user's jobs and settings (``/forget``); returns how many jobs went."""
    connection.execute(
        delete(UserSettingRow).where(
            UserSettingRow.platform == platform, UserSettingRow.user_id == user_id
        )
    )
    return rowcount(connection.execute(delete(JobRow).where(*_owned(platform, user_id))))


class JobQueries(RepositoryBase):
    """Adding, listing, cancelling and claiming jobs; each user's time zone."""

    async def add_job(self, job: NewJob, *, max_per_user: int) -> JobRecord:
        """Store a pending job; ``TooManyJobsError`` past ``max_per_user`` pending ones."""
        now = utcnow()
        values = {
            **{name: getattr(job, name) for name in NewJob.__slots__},
            "status": JOB_PENDING,
            "created_at": now,
            "runs": 0,
        }
        pending = (
            select(func.count())
            .select_from(JobRow)
            .where(*_owned(job.platform, job.user_id), JobRow.status == JOB_PENDING)
        )

        def add(connection: Connection) -> int:
            if int(connection.execute(pending).scalar_one()) >= max_per_user:
                raise TooManyJobsError(f"at most {max_per_user} scheduled jobs per user")
            result = connection.execute(insert(jobs_table).returning(JobRow.id), values)
            return int(result.scalar_one())

        job_id = await self._write(add)
        found = await self.get_job(job_id)
        assert found is not None
        return found

    async def get_job(self, job_id: int) -> JobRecord | None:
        """One job by id, whatever its status."""
        async with self._reading() as session:
            row = await session.get(JobRow, job_id)
            return _record(row) if row is not None else None

    async def all_pending_jobs(self, limit: int = 200) -> list[JobRecord]:
        """Every user's pending jobs, soonest first (the operators' page)."""
        query = (
            select(JobRow)
            .where(JobRow.status == JOB_PENDING)
            .order_by(JobRow.next_run_at, JobRow.id)
            .limit(limit)
        )
        async with self._reading() as session:
            return [_record(row) for row in (await session.scalars(query)).all()]

    async def pending_jobs(self, platform: str, user_id: str) -> list[JobRecord]:
        """The user's pending jobs, soonest first."""
        query = (
            select(JobRow)
            .where(*_owned(platform, user_id), JobRow.status == JOB_PENDING)
            .order_by(JobRow.next_run_at, JobRow.id)
        )
        async with self._reading() as session:
            return [_record(row) for row in (await session.scalars(query)).all()]

    async def cancel_job(self, platform: str, user_id: str, job_id: int) -> bool:
        """Cancel one of the user's pending jobs; False when they have no such job."""
        statement = (
            update(JobRow)
            .where(JobRow.id == job_id, *_owned(platform, user_id), JobRow.status == JOB_PENDING)
            .values(status=JOB_CANCELLED, next_run_at=None)
        )
        return bool(await self._write(lambda c: rowcount(c.execute(statement))))

    async def disable_job(self, job_id: int) -> None:
        """Stop a job whose owner may no longer talk to the bot."""
        statement = update(JobRow).where(JobRow.id == job_id).values(status=JOB_DISABLED)
        await self._write(lambda c: c.execute(statement))

    async def next_job_time(self, platforms: Collection[str]) -> datetime | None:
        """When the soonest pending job of these platforms is due (None: none is pending)."""
        query = select(func.min(JobRow.next_run_at)).where(
            JobRow.status == JOB_PENDING, JobRow.platform.in_(platforms)
        )
        async with self._reading() as session:
            found = await session.scalar(query)
        return JobRow.next_run_at.type.process_result_value(found, None) if found else None

    async def due_jobs(self, now: datetime, platforms: Collection[str]) -> list[JobRecord]:
        """Pending jobs of these platforms due at ``now`` or before, oldest first."""
        query = (
            select(JobRow)
            .where(
                JobRow.status == JOB_PENDING,
                JobRow.next_run_at <= now,
                JobRow.platform.in_(platforms),
            )
            .order_by(JobRow.next_run_at, JobRow.id)
        )
        async with self._reading() as session:
            return [_record(row) for row in (await session.scalars(query)).all()]

    async def claim_job(
        self, job: JobRecord, *, next_run_at: datetime | None, run: dict[str, Any]
    ) -> bool:
        """Take the job's due run: move it to ``next_run_at`` (None: done) and record ``run``
        (an inbound row: platform, platform_message_id, session_key, chat_id, user_id, text,
        payload) in one commit. False when someone else took it or it changed meanwhile."""
        now = utcnow()
        claim = (
            update(JobRow)
            .where(
                JobRow.id == job.id,
                JobRow.status == JOB_PENDING,
                JobRow.next_run_at == job.next_run_at,
                JobRow.runs == job.runs,
            )
            .values(
                next_run_at=next_run_at,
                status=JOB_PENDING if next_run_at is not None else JOB_DONE,
                last_run_at=now,
                runs=job.runs + 1,
            )
        )
        row = {
            **run,
            "status": PENDING_STATUS,
            "reply_platform_ids": [],
            "received_at": now,
            "updated_at": now,
        }

        def take(connection: Connection) -> bool:
            if rowcount(connection.execute(claim)) != 1:
                return False
            return insert_inbound_unless_seen(connection, row)

        return bool(await self._write(take))

    async def time_zone(self, platform: str, user_id: str) -> str | None:
        """The user's time zone name, None until they set one (UTC)."""
        query = select(UserSettingRow.time_zone).where(
            UserSettingRow.platform == platform, UserSettingRow.user_id == user_id
        )
        async with self._reading() as session:
            return await session.scalar(query)

    async def set_time_zone(self, platform: str, user_id: str, time_zone: str) -> None:
        """Store the user's time zone (an IANA name the caller checked)."""
        keys = (UserSettingRow.platform == platform, UserSettingRow.user_id == user_id)
        now = utcnow()

        def store(connection: Connection) -> None:
            changed = connection.execute(
                update(UserSettingRow).where(*keys).values(time_zone=time_zone, updated_at=now)
            )
            if rowcount(changed) == 0:
                connection.execute(
                    insert(cast(Table, UserSettingRow.__table__)),
                    {
                        "platform": platform,
                        "user_id": user_id,
                        "time_zone": time_zone,
                        "updated_at": now,
                    },
                )

        await self._write(store)
