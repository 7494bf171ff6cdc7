"""Backups while the daemon writes, restores only while it is stopped, one daemon per home."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from gateway.runtime.daemon_lock import DaemonLock, DaemonRunningError
from gateway.sessions.runtime import SessionAddress
from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.conftest import read_jsonl, run_cli, write_config
from tests.integration.policy_support import ADDRESS, WAIT, AppFactory

OTHER = SessionAddress("telegram:8", "telegram", "8", "8")


def _stored_ids(database: Path) -> set[int]:
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {row[0] for row in db.execute("SELECT id FROM messages")}


async def test_a_backup_taken_while_messages_are_written_restores_every_earlier_message(
    tmp_path: Path, policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    live = tmp_path / "live.db"
    config = write_config(tmp_path, anthropic.base_url, database={"url": f"sqlite:///{live}"})
    backup = tmp_path / "backups" / "hermes-backup.db"
    async with policy_app("live") as app:
        stop = asyncio.Event()
        progress = asyncio.Condition()
        turns = 0

        async def chat() -> None:
            nonlocal turns
            while not stop.is_set():
                await app.sessions.run_turn(ADDRESS, f"message {turns}")
                async with progress:
                    turns += 1
                    progress.notify_all()

        async def turns_reach(count: int) -> None:
            async with asyncio.timeout(WAIT), progress:
                await progress.wait_for(lambda: turns >= count)

        writer = asyncio.create_task(chat())
        await turns_reach(10)
        before = _stored_ids(live)
        result = await run_cli("backup", str(backup), "--config", str(config))
        await turns_reach(turns + 5)  # it went on writing during and after the backup
        stop.set()
        await writer
    assert result.code == 0, result.stderr
    assert "integrity ok" in result.stdout

    (tmp_path / "restored").mkdir()
    restored = tmp_path / "restored" / "hermes.db"
    other = write_config(
        tmp_path / "restored", anthropic.base_url, database={"url": f"sqlite:///{restored}"}
    )
    done = await run_cli("restore", str(backup), "--config", str(other))
    assert done.code == 0, done.stderr
    assert before <= _stored_ids(restored)


async def test_restore_is_refused_while_a_gateway_runs_and_health_says_so(
    tmp_path: Path, offline_env: Path
) -> None:
    config = write_config(tmp_path, "http://127.0.0.1:9")
    lock = DaemonLock.acquire(offline_env)  # what `hermes gateway run` holds while it runs
    try:
        health = await run_cli("health", "--config", str(config))
        refused = await run_cli("restore", str(tmp_path / "any.db"), "--config", str(config))
        second = await run_cli("gateway", "run", "--config", str(config))
    finally:
        lock.release()
    stopped = await run_cli("health", "--config", str(config))
    assert health.code == 0 and "gateway running (pid" in health.stdout
    assert refused.code == 1 and "the gateway is running" in refused.stderr
    assert second.code == 4 and "already running" in second.stderr
    assert stopped.code == 1 and "no gateway is running" in stopped.stdout


def test_a_second_lock_on_the_same_home_is_refused_and_names_the_holder(tmp_path: Path) -> None:
    first = DaemonLock.acquire(tmp_path)
    try:
        try:
            DaemonLock.acquire(tmp_path)
        except DaemonRunningError as refused:
            assert refused.pid is not None and refused.pid > 0
        else:
            raise AssertionError("a second daemon lock was granted")
    finally:
        first.release()
    DaemonLock.acquire(tmp_path).release()  # free again once released


async def test_a_damaged_backup_is_refused_and_the_database_left_alone(
    tmp_path: Path, anthropic: AnthropicEmulator
) -> None:
    database = tmp_path / "hermes.db"
    config = write_config(tmp_path, anthropic.base_url, database={"url": f"sqlite:///{database}"})
    chat = await run_cli("chat", "--config", str(config), stdin="hello\n")
    assert chat.code == 0, chat.stderr
    before = _stored_ids(database)
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\x07" * 4096)
    refused = await run_cli("restore", str(damaged), "--config", str(config))
    assert refused.code == 1 and "restore refused" in refused.stderr
    assert _stored_ids(database) == before


async def test_export_all_writes_every_session(
    tmp_path: Path, policy_app: AppFactory, anthropic: AnthropicEmulator
) -> None:
    async with policy_app("two") as app:
        await app.sessions.run_turn(ADDRESS, "first chat")
        await app.sessions.run_turn(OTHER, "second chat")
    database = tmp_path / "two.db"
    config = write_config(tmp_path, anthropic.base_url, database={"url": f"sqlite:///{database}"})
    out = tmp_path / "all.jsonl"
    done = await run_cli("sessions", "export", "--all", "-o", str(out), "--config", str(config))
    assert done.code == 0, done.stderr
    rows = [row for row in read_jsonl(out) if row["type"] == "message"]
    assert len({row["session_id"] for row in rows}) == 2
    assert {row["id"] for row in rows} == _stored_ids(database)
