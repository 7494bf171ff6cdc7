"""Failover bench (not a test): how long a takeover takes and what leadership costs.

* **Takeover after kill -9**: real daemons on one PostgreSQL database; the serving leader is
  SIGKILLed; the time until a standby serves (leads and polls Telegram). Its session ends with
  the process, so a standby sees it gone at its next look (within a second), not at expiry.
* **Takeover after a pause**: the leader is SIGSTOPped; a standby serves once the lease expired
  (``lease_seconds`` after the last renewal); then the paused one is woken and must step down.
* **Cost of leadership**: statements sent on the election's dedicated connection per minute,
  by a leader (renewals and heartbeats) and by a standby (takeover attempts, heartbeats, a
  look at the lease), measured in-process on the same database. The leader's store also sends
  one fence statement per write batch (in the batch's own transaction).

    python -m bench.failover --rounds 5 --lease 10
    python -m bench.failover --pg-url postgresql://user:pw@host/empty_db --rounds 3

Without ``--pg-url`` a throwaway PostgreSQL server is started (Debian's binaries, as the
tests do).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import event

from bench.failover_cluster import Cluster, Member, database_or_throwaway, running_cluster
from gateway.runtime.election import Election
from gateway.store.db import upgrade_database
from gateway.store.leases import MemberIdentity
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator

STANDING_BY = "failover: standing by as"
STANDING_BY_AGAIN = "failover: standing by again"
COST_SECONDS = 30.0
"""How long the in-process election runs to count its statements (scaled to a minute)."""


@dataclass
class FailoverBenchReport:
    """Takeover times (seconds) and the election's statements per minute."""

    lease_seconds: float
    takeover_after_kill: list[float] = field(default_factory=list)
    takeover_after_pause: list[float] = field(default_factory=list)
    woken_leader_calls: int = 0
    """Bot API calls of a woken leader after SIGCONT (must be 0)."""
    leader_statements_per_minute: float = 0.0
    standby_statements_per_minute: float = 0.0

    def summary(self) -> dict[str, Any]:
        """p50 and max of each takeover, and the costs."""
        return {
            "lease_seconds": self.lease_seconds,
            "kill_p50": _p50(self.takeover_after_kill),
            "kill_max": max(self.takeover_after_kill, default=None),
            "pause_p50": _p50(self.takeover_after_pause),
            "pause_max": max(self.takeover_after_pause, default=None),
            "woken_leader_calls": self.woken_leader_calls,
            "leader_statements_per_minute": self.leader_statements_per_minute,
            "standby_statements_per_minute": self.standby_statements_per_minute,
        }


def _p50(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


async def measure_takeovers(
    workdir: Path, pg_url: str, rounds: int, lease_seconds: float, report: FailoverBenchReport
) -> None:
    """``rounds`` kills, then ``rounds`` pauses, of the serving leader of two daemons."""
    async with (
        TelegramEmulator() as telegram,
        AnthropicEmulator() as anthropic,
        running_cluster(
            workdir, pg_url, telegram, anthropic, size=2, lease_seconds=lease_seconds
        ) as cluster,
    ):
        for _ in range(rounds):
            report.takeover_after_kill.append(await _kill_once(cluster))
        for _ in range(rounds):
            report.takeover_after_pause.append(await _pause_once(cluster, report))


async def _kill_once(cluster: Cluster) -> float:
    leader, lease = await cluster.wait_serving()
    started = time.monotonic()
    await cluster.kill(leader)
    await cluster.wait_serving(after_epoch=lease.epoch)
    took = round(time.monotonic() - started, 2)
    before = _count(leader, STANDING_BY)
    await cluster.start(leader)
    await _wait_line(leader, STANDING_BY, before)
    return took


async def _pause_once(cluster: Cluster, report: FailoverBenchReport) -> float:
    leader, lease = await cluster.wait_serving()
    started = time.monotonic()
    cluster.pause(leader)
    await cluster.wait_serving(after_epoch=lease.epoch)
    took = round(time.monotonic() - started, 2)
    before = _count(leader, STANDING_BY_AGAIN)
    cluster.resume(leader)
    await _wait_line(leader, STANDING_BY_AGAIN, before)
    report.woken_leader_calls += len(cluster.calls_by(leader, leader.resumed_at[-1]))
    return took


def _count(member: Member, line: str) -> int:
    return member.log.read_text(errors="replace").count(line) if member.log.exists() else 0


async def _wait_line(member: Member, line: str, before: int) -> None:
    """Wait until ``member`` logged ``line`` once more than ``before`` times."""
    async with asyncio.timeout(60):
        # A log line is the only sign another process gives: read it again.
        while _count(member, line) <= before:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


@contextmanager
def _counting(election: Election) -> Iterator[list[int]]:
    """Count the statements sent on ``election``'s connection (after it connected)."""
    count = [0]
    engine = election._engine  # the bench looks inside: the count is what it measures
    assert engine is not None

    def counted(*_args: object) -> None:
        count[0] += 1

    event.listen(engine.sync_engine, "before_cursor_execute", counted)
    try:
        yield count
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", counted)


async def measure_cost(pg_url: str, lease_seconds: float, report: FailoverBenchReport) -> None:
    """A leader and a standby elected in-process for :data:`COST_SECONDS`."""
    await upgrade_database(pg_url)
    leader = Election(pg_url, lease_seconds, MemberIdentity("bench-a:1:x", "bench-a", 1))
    standby = Election(pg_url, lease_seconds, MemberIdentity("bench-b:2:y", "bench-b", 2))
    async with leader, standby:
        await leader.campaign()
        campaign = asyncio.create_task(standby.campaign())
        with _counting(leader) as led, _counting(standby) as stood:
            await asyncio.sleep(COST_SECONDS)
        campaign.cancel()
    scale = 60.0 / COST_SECONDS
    report.leader_statements_per_minute = round(led[0] * scale, 1)
    report.standby_statements_per_minute = round(stood[0] * scale, 1)


async def run_bench(
    pg_url: str, rounds: int, lease_seconds: float, workdir: Path
) -> FailoverBenchReport:
    """The whole bench on the empty database ``pg_url``."""
    report = FailoverBenchReport(lease_seconds=lease_seconds)
    await measure_takeovers(workdir, pg_url, rounds, lease_seconds, report)
    await measure_cost(pg_url, lease_seconds, report)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-url", help="an empty database (default: a throwaway server)")
    parser.add_argument("--rounds", type=int, default=5, help="kills, then as many pauses")
    parser.add_argument("--lease", type=float, default=10.0, help="gateway.failover.lease_seconds")
    args = parser.parse_args(argv)
    with (
        database_or_throwaway(args.pg_url) as url,
        tempfile.TemporaryDirectory(prefix="hermes-fo-") as tmp,
    ):
        report = asyncio.run(run_bench(url, args.rounds, args.lease, Path(tmp)))
    print(json.dumps({"summary": report.summary(), "rounds": asdict(report)}, indent=2))
    return 1 if report.woken_leader_calls else 0


if __name__ == "__main__":
    sys.exit(main())
