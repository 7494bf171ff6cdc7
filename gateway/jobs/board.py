"""The jobs as the tool and the commands change them: the store, the limits, and the signal
that wakes the scheduler when a job is added."""

from __future__ import annotations

import asyncio

from gateway.config.schema import JobsSettings
from gateway.jobs.clock import JobClock, SystemClock
from gateway.store.job_records import JobRecord, NewJob
from gateway.store.ports import JobStore

DEFAULT_TIME_ZONE = "UTC"
"""A user's time zone until they set one with ``/tz``."""


class JobBoard:
    """Adding and cancelling jobs, each user's time zone; one per process."""

    def __init__(
        self, store: JobStore, settings: JobsSettings, clock: JobClock | None = None
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock: JobClock = clock or SystemClock()
        self.changed = asyncio.Event()
        """Set when a job was added: the scheduler looks again at when to wake."""

    async def add(self, job: NewJob) -> JobRecord:
        """Store a job (``TooManyJobsError`` past ``jobs.max_per_user``) and wake the scheduler."""
        record = await self.store.add_job(job, max_per_user=self.settings.max_per_user)
        self.changed.set()
        return record

    async def time_zone(self, platform: str, user_id: str) -> str:
        """The user's time zone name (UTC until set)."""
        return await self.store.time_zone(platform, user_id) or DEFAULT_TIME_ZONE
