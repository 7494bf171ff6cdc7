"""Gateways started together on one empty PostgreSQL database with failover on: the schema is
migrated once, one gateway leads and serves, the others stand by; none exits."""

from __future__ import annotations

from pathlib import Path

from bench.failover_cluster import read_logs, running_cluster
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE


async def test_three_gateways_started_at_once_on_an_empty_database_all_come_up(
    tmp_path: Path, pg_url: str, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with running_cluster(tmp_path, pg_url, telegram, anthropic, size=3) as cluster:
        leader, lease = await cluster.wait_serving()
        telegram.push_message(ALICE, "hello from the group")
        await telegram.wait_for_sent(ALICE, 1, timeout=30)
        standbys = [member for member in cluster.members if member is not leader]
        for member in standbys:
            assert member.pid is not None, read_logs(cluster)[member.name]
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
    [reply] = telegram.sent_messages(ALICE)
    assert reply["text"].startswith("Noted: hello from the group")
