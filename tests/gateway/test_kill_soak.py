"""The real daemon SIGKILLed at random moments while five chats write (merged turns and
multi-part replies included) and restarted each time: every message answered exactly once,
every part delivered exactly once, no user text stored twice, the SQLite file intact.

A short version of ``python -m bench.kill_soak`` (20 kills, 225 messages)."""

from __future__ import annotations

from pathlib import Path

from bench.kill_soak import SoakSettings, run_soak

SETTINGS = SoakSettings(
    chats=5,
    messages=8,
    kills=5,
    seed=10,
    send_gap=(0.5, 3.0),
    burst_chance=0.4,
    uptime=(0.3, 2.0),
)


async def test_sigkills_at_random_moments_lose_nothing_and_double_nothing(tmp_path: Path) -> None:
    report = await run_soak(SETTINGS, tmp_path)

    log = (tmp_path / "daemon.log").read_text()
    assert report.problems == [], log[-3000:]
    assert report.kills == SETTINGS.kills
    assert report.integrity == "ok"
    # The scenario did cover what it is about.
    assert report.multi_part_replies >= 1
    assert report.merged_turns >= 1
    assert "gateway stopped" in log
