"""The scheduler: sleeps until the next job is due, then hands each due run to the gateway.

It sleeps on the injected clock until the soonest pending job's time (or until a job is
added); nothing runs while no job is due. A due run is claimed by one conditional update that
records it as an inbound message in the same commit (:meth:`JobStore.claim_job`), then
dispatched like any message: the session's worker runs it as an ordinary turn and the reply
goes through the reply outbox, so a job runs once and its answer is delivered once, across
crashes (a claimed run not yet answered is an unfinished inbound message, resumed at start).

A run found more than ``jobs.grace_minutes`` late (the daemon was down) is not run: its owner
gets a notice instead (an inbound run marked missed, answered without a model call).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from datetime import datetime, timedelta

from gateway.jobs.board import JobBoard
from gateway.jobs.times import JobTimeError, local_text, next_cron_time
from gateway.messages.failures import failure_summary
from gateway.messages.inbound import InboundMessage
from gateway.store.job_records import JobRecord, job_id_of, job_run_id

log = logging.getLogger(__name__)

RETRY_AFTER_ERROR = timedelta(seconds=30)
"""When the store could not be read (the database is down), how soon the scheduler looks again."""
PROMPT_PREVIEW_CHARS = 60
"""How much of a job's prompt a notice or ``/jobs`` shows."""
MISSED_TEXT = (
    "I could not run your scheduled job “{prompt}” due {due}: I was offline for more than "
    "{grace} minutes after its time, so it was skipped."
)

RUN_HEADER = "[Scheduled job {id}, due {due}]"
"""Opens a run's text, so the model knows the request is the job's, not the user's now (a
"remind me" prompt is then carried out, not scheduled again)."""
OVER_BUDGET_TEXT = "Your scheduled job {id} was skipped. {refusal}"

Dispatch = Callable[[InboundMessage], None]
MayRun = Callable[[InboundMessage], Awaitable[bool]]


def preview(prompt: str) -> str:
    """The start of a prompt, for listings and notices."""
    if len(prompt) <= PROMPT_PREVIEW_CHARS:
        return prompt
    return prompt[: PROMPT_PREVIEW_CHARS - 1].rstrip() + "…"


def over_budget_notice(run: InboundMessage, refusal: str) -> str:
    """What the owner of a job run refused by a spending limit is told."""
    return OVER_BUDGET_TEXT.format(id=job_id_of(run.platform_message_id), refusal=refusal)


def run_message(job: JobRecord, *, missed_text: str | None = None) -> InboundMessage:
    """The inbound message that stands for the job's next run (its ``runs``-th claim).

    Its time is the job's due time (sessions decide on message times, never the wall clock);
    a missed run carries the notice as its text and runs no turn.
    """
    assert job.next_run_at is not None
    missed = missed_text is not None
    header = RUN_HEADER.format(id=job.id, due=local_text(job.next_run_at, job.time_zone))
    return InboundMessage(
        platform=job.platform,
        chat_id=job.chat_id,
        user_id=job.user_id,
        username=job.username,
        text=missed_text if missed_text is not None else f"{header} {job.prompt}",
        platform_message_id=job_run_id(job.id, job.runs + 1, missed=missed),
        session_key=f"{job.session_key}#job{job.id}" if missed else job.run_session_key,
        thread_id=job.thread_id,
        chat_type=job.chat_type,
        sent_at=job.next_run_at.timestamp(),
    )


class JobScheduler:
    """Runs due jobs through the gateway: ``dispatch`` hands a recorded run to the workers,
    ``may_run`` says whether the job's owner may still talk to the bot (else it is disabled)."""

    def __init__(
        self, board: JobBoard, platforms: Collection[str], dispatch: Dispatch, may_run: MayRun
    ) -> None:
        self.board = board
        self.platforms = frozenset(platforms)
        """Only jobs of the running platforms are run (the others wait for theirs)."""
        self.store = board.store
        self.clock = board.clock
        self.dispatch = dispatch
        self.may_run = may_run
        self.grace = timedelta(minutes=board.settings.grace_minutes)

    async def run(self) -> None:
        """Forever: run what is due, then sleep until the next job or a new one."""
        while True:
            self.board.changed.clear()
            try:
                await self.run_due()
                next_at = await self.store.next_job_time(self.platforms)
            except Exception as exc:  # the database is down: look again later
                log.warning("scheduled jobs not checked: %s", failure_summary(exc))
                next_at = self.clock.now() + RETRY_AFTER_ERROR
            await self.clock.sleep_until(next_at, self.board.changed)

    async def run_due(self) -> int:
        """Claim and dispatch every run due now; returns how many were dispatched."""
        now = self.clock.now()
        started = 0
        for job in await self.store.due_jobs(now, self.platforms):
            started += await self._start(job, now)
        return started

    async def _start(self, job: JobRecord, now: datetime) -> int:
        assert job.next_run_at is not None
        missed = now - job.next_run_at > self.grace
        message = run_message(job, missed_text=self._missed_text(job) if missed else None)
        if not await self.may_run(message):
            log.info("job %s disabled: its owner may no longer talk to the bot", job.id)
            await self.store.disable_job(job.id)
            return 0
        try:
            following = self._following(job, now)
        except JobTimeError as exc:  # a zone that vanished from the system's tz database
            log.error("job %s has no next time: %s", job.id, exc)
            following = None
        run = {
            "platform": message.platform,
            "platform_message_id": message.platform_message_id,
            "session_key": message.session_key,
            "chat_id": message.chat_id,
            "user_id": message.user_id,
            "text": message.text,
            "payload": message.to_payload(),
        }
        if not await self.store.claim_job(job, next_run_at=following, run=run):
            return 0  # taken by another process, or changed (cancelled) meanwhile
        if missed:
            log.info("job %s missed its time by more than the grace; owner told", job.id)
        self.dispatch(message)
        return 1

    def _following(self, job: JobRecord, now: datetime) -> datetime | None:
        """A recurring job's next time after this run (None: a one-shot job is done)."""
        if job.kind != "cron" or job.cron is None:
            return None
        assert job.next_run_at is not None
        return next_cron_time(job.cron, job.time_zone, max(now, job.next_run_at))

    def _missed_text(self, job: JobRecord) -> str:
        assert job.next_run_at is not None
        return MISSED_TEXT.format(
            prompt=preview(job.prompt),
            due=local_text(job.next_run_at, job.time_zone),
            grace=self.board.settings.grace_minutes,
        )
