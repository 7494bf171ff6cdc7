"""Gateways started together on one empty PostgreSQL database with failover on: the schema is
migrated once, one gateway leads and serves, the others stand by; none exits."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.model_table import lookup_model
from bench.failover_cluster import read_logs, running_cluster
from gateway.cli.doctor import store_checks
from gateway.config.schema import LimitsSettings
from gateway.dashboard.metrics import metrics_text
from gateway.dashboard.overview import Overview, build_overview
from gateway.reports.failover import failover_lines
from gateway.store.db import open_store
from gateway.store.repository import Repository
from gateway.store.repository_failover import FailoverState
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE


async def test_three_gateways_started_at_once_on_an_empty_database_all_come_up(
    tmp_path: Path, pg_url: str, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    admin = {"admin_users": [ALICE]}
    async with running_cluster(
        tmp_path, pg_url, telegram, anthropic, size=3, telegram_settings=admin
    ) as cluster:
        leader, lease = await cluster.wait_serving()
        leader_pid = leader.pid
        telegram.push_message(ALICE, "hello from the group")
        await telegram.wait_for_sent(ALICE, 1, timeout=30)
        standbys = [member for member in cluster.members if member is not leader]
        for member in standbys:
            assert member.pid is not None, read_logs(cluster)[member.name]
        state, metrics, overview = await seen_state(pg_url, {m.pid for m in standbys})
        doctor = await store_checks(pg_url, failover=True)
        telegram.push_message(ALICE, "/status")
        await telegram.wait_for_sent(ALICE, 2, timeout=30)
        # Standbys first: a leader stopping cleanly hands the lease to a standby at once.
        codes = [await cluster.stop(member) for member in [*standbys, leader]]
    logs = read_logs(cluster)
    assert codes == [0, 0, 0], logs
    assert lease.epoch == 1
    assert "failover: leading as" in logs[leader.name]
    for member in standbys:
        assert "failover: standing by; " in logs[member.name], logs[member.name]
        assert "leading as" not in logs[member.name]
        # A standby talks to no platform.
        assert cluster.calls_by(member, since=0.0) == []
    reply, status = telegram.sent_messages(ALICE)
    assert reply["text"].startswith("Noted: hello from the group")
    # Who leads and who stands by, as /status, hermes doctor and the dashboard say it.
    assert state.lease.pid == leader_pid
    leads, seen = failover_lines(state)
    assert leads.startswith(f"Failover: {state.lease.holder} leads since ")
    assert leads.endswith("(epoch 1, 0 takeovers)")
    assert seen.startswith("Standbys seen: ") and seen.count(" s ago)") == 2
    assert ("ok", leads) in doctor  # hermes doctor
    [doctor_seen] = [line for _, line in doctor if line.startswith("Standbys seen: ")]
    assert doctor_seen.count(" s ago)") == 2  # (ages may tick between two reads)
    assert f"Failover: {state.lease.holder} leads since " in status["text"]
    assert "Standbys seen: " in status["text"]
    assert f'hermes_failover_leader{{holder="{state.lease.holder}"}} 1.0' in metrics
    assert 'hermes_failover_members{role="standby"} 2.0' in metrics
    assert "hermes_failover_takeovers_total 0.0" in metrics
    assert overview.failover[0] == leads  # the dashboard card (ages may tick between reads)
    assert overview.failover[1].startswith("Standbys seen: ")


async def seen_state(
    pg_url: str, standby_pids: set[int | None]
) -> tuple[FailoverState, str, Overview]:
    """The election's state once every standby has reported itself (heartbeats), and
    ``/metrics`` and the dashboard's overview as they read then."""
    store = await open_store(pg_url)
    try:
        repo = Repository(store)
        async with asyncio.timeout(30):
            while True:
                state = await repo.failover_state()
                if state is not None and {m.pid for m in state.standbys} == standby_pids:
                    break
                await asyncio.sleep(0.1)
        model = lookup_model("claude-sonnet-4-5")
        exposition = await metrics_text(repo, model)
        overview = await build_overview(repo, LimitsSettings(), model)
    finally:
        await store.close()
    return state, exposition.decode(), overview
