"""Three real gateways on one PostgreSQL database while four chats write: the leader is killed
with SIGKILL mid-work and paused past its lease (then woken), round after round. Every message
is answered exactly once, every part delivered once, nothing is lost from the store, and a
leader woken after its lease moved on calls the Bot API no more.

A short version of ``python -m bench.failover_soak``."""

from __future__ import annotations

from pathlib import Path

from bench.failover_soak import FailoverSoakSettings, run_failover_soak

SETTINGS = FailoverSoakSettings(
    members=3, chats=4, messages=8, schedule=("kill", "pause", "kill", "pause"), seed=35
)


async def test_kills_and_pauses_of_the_leader_lose_nothing_double_nothing_and_fence_the_sleeper(
    tmp_path: Path, pg_url: str
) -> None:
    report = await run_failover_soak(SETTINGS, tmp_path, pg_url)

    logs = "\n".join(
        f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}"
        for path in sorted(tmp_path.glob("g*.log"))
    )
    assert report.problems == [], logs
    assert (report.kills, report.pauses) == (2, 2)
    assert report.calls_after_waking == 0
    # Every takeover happened (the harness waited for each); their times are the bench's.
    assert len(report.takeover_seconds["kill"]) == 2
    assert len(report.takeover_seconds["pause"]) == 2
    woken = [path.read_text() for path in tmp_path.glob("g*.log")]
    assert sum(log.count("failover: stepping down from epoch") for log in woken) >= 2
