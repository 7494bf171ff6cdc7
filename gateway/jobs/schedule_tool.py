"""The ``schedule`` tool: the model sets up a job (one-shot or recurring) for the user.

A job is a prompt run as an agent turn at its time, in the chat it was created in. The model
computes one-shot times itself ("in 20 minutes": ``delay_seconds``; "tomorrow at 7:00":
``at``, read in the user's time zone); recurring jobs are 5-field cron expressions in that zone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.tools.registry import Tool, ToolError
from gateway.jobs.board import JobBoard
from gateway.jobs.times import JobTimeError, check_cron, local_text, next_cron_time, one_shot_time
from gateway.store.job_records import NewJob
from gateway.store.repository_jobs import TooManyJobsError

SCHEDULE_TOOL_NAME = "schedule"
JOB_KEY_MARK = "#job"
"""Joins a chat's session key and a job id into the job's own session key."""


@dataclass(frozen=True, slots=True)
class JobOrigin:
    """The chat and user a job is created for (where its answers go)."""

    platform: str
    user_id: str
    chat_id: str
    thread_id: str | None
    chat_type: str
    session_key: str
    username: str | None = None

    @property
    def chat_session_key(self) -> str:
        """The chat's own session key (a job's session schedules into the chat's)."""
        return self.session_key.split(JOB_KEY_MARK, 1)[0]


def schedule_tool(board: JobBoard, current_origin: Callable[[], JobOrigin | None]) -> Tool:
    """The tool scheduling jobs for the user whose turn runs, in their chat: ``current_origin``
    says who that is at the call (in a group session, each turn may be another member's)."""

    async def handle(args: dict[str, Any]) -> str:
        origin = current_origin()
        if origin is None:
            raise ToolError("jobs need a chat user to belong to; there is none here")
        prompt = " ".join(str(args.get("prompt") or "").split())
        if not prompt:
            raise ToolError("missing 'prompt' (what to do when the job runs)")
        time_zone = await board.time_zone(origin.platform, origin.user_id)
        now = board.clock.now()
        cron = args.get("cron")
        try:
            if cron:
                expression = check_cron(str(cron))
                when = next_cron_time(expression, time_zone, now)
            else:
                expression = None
                delay = args.get("delay_seconds")
                when = one_shot_time(
                    args.get("at"), float(delay) if delay is not None else None, time_zone, now
                )
        except (JobTimeError, TypeError, ValueError) as exc:
            raise ToolError(str(exc)) from exc
        job = NewJob(
            origin.platform,
            origin.user_id,
            origin.chat_id,
            origin.thread_id,
            origin.chat_type,
            origin.chat_session_key,
            prompt,
            "cron" if expression else "once",
            expression,
            time_zone,
            when,
            own_session=not bool(args.get("continue_session")),
            username=origin.username,
        )
        try:
            record = await board.add(job)
        except TooManyJobsError as exc:
            raise ToolError(f"{exc}; the user can cancel one with /jobs cancel N") from exc
        repeat = f", then on '{expression}'" if expression else ""
        return f"Scheduled job {record.id}: first run {local_text(when, time_zone)}{repeat}."

    return Tool(
        SCHEDULE_TOOL_NAME,
        "Schedule a job for the user: at its time, 'prompt' is run as a new request in this "
        "chat and your answer is sent to the user (a reminder, a summary, a check). One-shot: "
        "delay_seconds (for 'in 20 minutes': 1200) or at (an ISO time like 2026-12-06T07:00, "
        "read in the user's time zone). Recurring: cron (5 fields, minute hour day month "
        "weekday, in the user's time zone). The job runs in its own session unless "
        "continue_session is true. The user lists and cancels jobs with /jobs and sets the "
        "time zone with /tz.",
        {
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "description": "What to do at that time, as an instruction to yourself.",
                },
                "delay_seconds": {"type": "number", "description": "Run once, this much later."},
                "at": {"type": "string", "description": "Run once at this ISO time."},
                "cron": {"type": "string", "description": "Run repeatedly (5-field cron)."},
                "continue_session": {
                    "type": "boolean",
                    "description": "Run in this chat's conversation instead of a fresh one.",
                },
            },
            "required": ["prompt"],
        },
        handle,
    )
