"""Three real gateways on one PostgreSQL database while four chats write: the leader is killed
with SIGKILL mid-work, paused past its lease (then woken), and every host is killed and started
again at once, round after round. Every message
is answered exactly once, every part delivered once, nothing is lost from the store, and a
leader woken after its lease moved on calls the Bot API no more (but for the one long poll whose
gate passed before the pause and whose request reached Telegram after it).

A short version of ``python -m bench.failover_soak``."""

from __future__ import annotations

from pathlib import Path

from bench.failover_soak import FailoverSoakSettings, run_failover_soak

SETTINGS = FailoverSoakSettings(
    members=3,
    chats=4,
    messages=8,
    schedule=("kill", "pause", "restart_all", "kill", "pause"),
    seed=35,
    stream_delay=0.02,  # answers stream as drafts: pauses land mid-stream too
)


async def test_kills_and_pauses_of_the_leader_lose_nothing_double_nothing_and_fence_the_sleeper(
    tmp_path: Path, pg_url: str
) -> None:
    report = await run_failover_soak(SETTINGS, tmp_path, pg_url)

    assert report.problems == [], log_tails(tmp_path)
    assert (report.kills, report.pauses, report.restarts_of_all) == (2, 2, 1)
    assert report.calls_after_waking == 0
    assert report.polls_in_flight <= report.pauses
    # Every takeover happened (the harness waited for each); their times are the bench's.
    assert len(report.takeover_seconds["kill"]) == 2
    assert len(report.takeover_seconds["pause"]) == 2
    assert report.step_downs >= 2  # at least each woken leader's
    assert report.turns_resumed >= 1  # the scenario covered kills mid-turn...
    assert report.multi_part_replies >= 1  # ...long answers...
    assert report.drafts >= 1  # ...and answers shown live


def log_tails(workdir: Path) -> str:
    """The end of each member's log, for a failure's message."""
    return "\n".join(
        f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}"
        for path in sorted(workdir.glob("g*.log"))
    )
