"""Scheduled jobs as the store hands them out: small frozen values, no SQLAlchemy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

JobKind = Literal["once", "cron"]

JOB_PENDING = "pending"
"""Waiting for its next time."""
JOB_DONE = "done"
"""A one-shot job that ran (or was skipped)."""
JOB_CANCELLED = "cancelled"
JOB_DISABLED = "disabled"
"""Its owner may no longer talk to the bot."""

JOB_RUN_PREFIX = "job-"
"""Platform ids of the inbound messages that stand for job runs start with this; they are not
positions in a chat (catch-up and the delivered-part probe skip them)."""


def job_run_id(job_id: int, run: int, *, missed: bool = False) -> str:
    """The inbound id of a job's ``run``-th run (unique: a run is recorded once)."""
    return f"{JOB_RUN_PREFIX}{job_id}-{run}{'-missed' if missed else ''}"


def job_id_of(platform_message_id: str) -> int:
    """The job a run's inbound id stands for (ValueError for another id)."""
    if not is_job_run(platform_message_id):
        raise ValueError(f"{platform_message_id!r} is no job run")
    return int(platform_message_id.removeprefix(JOB_RUN_PREFIX).split("-", 1)[0])


def is_job_run(platform_message_id: str) -> bool:
    """Whether an inbound id stands for a job's run (not a message someone wrote)."""
    return platform_message_id.startswith(JOB_RUN_PREFIX)


def is_missed_run(platform_message_id: str) -> bool:
    """Whether an inbound id stands for a run that was skipped (the user is told, no turn)."""
    return platform_message_id.startswith(JOB_RUN_PREFIX) and platform_message_id.endswith(
        "-missed"
    )


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job as the ``schedule`` tool asks for it."""

    platform: str
    user_id: str
    chat_id: str
    thread_id: str | None
    chat_type: str
    session_key: str
    prompt: str
    kind: JobKind
    cron: str | None
    time_zone: str
    next_run_at: datetime
    own_session: bool = True
    username: str | None = None
    """The owner's username (an allowlist may name them by it)."""


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A stored job; ``runs`` counts its claims so far."""

    id: int
    platform: str
    user_id: str
    chat_id: str
    thread_id: str | None
    chat_type: str
    session_key: str
    prompt: str
    kind: JobKind
    cron: str | None
    time_zone: str
    next_run_at: datetime | None
    status: str
    own_session: bool
    created_at: datetime
    last_run_at: datetime | None
    runs: int
    username: str | None = None

    @property
    def run_session_key(self) -> str:
        """The session its turns run in: its own, or the chat's when it continues it."""
        return f"{self.session_key}#job{self.id}" if self.own_session else self.session_key
