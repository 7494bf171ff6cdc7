"""``/jobs``: the user's pending scheduled jobs (next time, start of the prompt), ``/jobs cancel
N`` to cancel one; ``/tz Europe/Berlin``: the user's time zone for their jobs (UTC until set).
"""

from __future__ import annotations

from gateway.commands.registry import CommandContext, CommandSpec
from gateway.jobs.board import JobBoard
from gateway.jobs.scheduler import preview
from gateway.jobs.times import JobTimeError, local_text, zone

OFF_TEXT = "Scheduled jobs are off here."
EMPTY_TEXT = "You have no scheduled jobs. Ask me to remind you of something, or to do it daily."
USAGE_TEXT = "Use /jobs to list your jobs, /jobs cancel N to cancel job N."
TZ_USAGE_TEXT = "Use /tz Europe/Berlin (an IANA time zone name) to set your time zone."


def _board(ctx: CommandContext) -> JobBoard | None:
    return ctx.sessions.services.jobs if ctx.address.user_id is not None else None


async def jobs_command(ctx: CommandContext) -> str:
    """List the user's pending jobs, or cancel one by its number."""
    board = _board(ctx)
    if board is None or ctx.address.user_id is None:
        return OFF_TEXT
    platform, user_id = ctx.address.platform, ctx.address.user_id
    words = ctx.argument.split()
    if not words:
        jobs = await board.store.pending_jobs(platform, user_id)
        if not jobs:
            return EMPTY_TEXT
        lines = ["Your scheduled jobs:"]
        for job in jobs:
            assert job.next_run_at is not None
            repeat = f", repeats {job.cron}" if job.cron else ""
            when = local_text(job.next_run_at, job.time_zone)
            lines.append(f"{job.id}. {when}{repeat}: {preview(job.prompt)}")
        return "\n".join(lines)
    if len(words) != 2 or words[0].lower() != "cancel" or not words[1].isdigit():
        return USAGE_TEXT
    if not await board.store.cancel_job(platform, user_id, int(words[1])):
        return f"You have no pending job {words[1]}; /jobs lists them."
    return f"Cancelled job {words[1]}."


async def tz_command(ctx: CommandContext) -> str:
    """Show or set the user's time zone."""
    board = _board(ctx)
    if board is None or ctx.address.user_id is None:
        return OFF_TEXT
    platform, user_id = ctx.address.platform, ctx.address.user_id
    name = ctx.argument.strip()
    if not name:
        current = await board.time_zone(platform, user_id)
        return f"Your time zone is {current}. {TZ_USAGE_TEXT}"
    try:
        zone(name)
    except JobTimeError as exc:
        return f"{str(exc).capitalize()}. {TZ_USAGE_TEXT}"
    await board.store.set_time_zone(platform, user_id, name)
    now = local_text(board.clock.now(), name)
    return f"Your time zone is now {name} (it is {now}). New jobs use it."


JOBS_COMMAND = CommandSpec(
    "jobs", "Your scheduled jobs; cancel N cancels one", jobs_command, arguments="[cancel N]"
)
TZ_COMMAND = CommandSpec("tz", "Your time zone for scheduled jobs", tz_command, arguments="[zone]")
