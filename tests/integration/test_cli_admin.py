"""Administrative commands: db upgrade, doctor, plugins list, sessions show."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from gateway.messages.quarantine import DeadLetter
from gateway.store.db import open_store
from gateway.store.repository import Repository
from tests.integration.conftest import run_cli, write_config


async def test_db_upgrade_is_idempotent(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url)
    first = await run_cli("db", "upgrade", "--config", str(config))
    second = await run_cli("db", "upgrade", "--config", str(config))
    assert first.code == second.code == 0, first.stderr + second.stderr
    assert first.stdout.split("revision")[-1] == second.stdout.split("revision")[-1]


async def test_doctor_reports_each_check_and_fails_on_a_missing_key(
    tmp_path, emulator, monkeypatch
):
    config = write_config(tmp_path, emulator.base_url, platforms={"telegram": {"enabled": True}})
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    result = await run_cli("doctor", "--config", str(config))
    assert result.code == 1
    assert "[  ok] model API key: HERMES_TEST_ANTHROPIC_KEY is set" in result.stdout
    assert "[FAIL] telegram bot token: TELEGRAM_BOT_TOKEN is not set" in result.stdout
    assert "[warn] telegram: allowed_users is empty" in result.stdout
    assert "[  ok] tokenizer loads offline" in result.stdout
    assert "[  ok] Summary model: claude-haiku-4-5 (auto-detected" in result.stdout
    assert "[  ok] quarantined updates: none" in result.stdout
    assert "test-key" not in result.stdout + result.stderr


async def test_doctor_counts_quarantined_updates(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url)
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    try:
        letter = DeadLetter("telegram", "message without chat", {"update_id": 9}, "9")
        await Repository(store).add_dead_letter(letter)
    finally:
        await store.close()
    result = await run_cli("doctor", "--config", str(config))
    assert "[warn] quarantined updates: 1 " in result.stdout


async def test_plugins_list_shows_the_builtin_and_marks_the_active_engine(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url)
    result = await run_cli("plugins", "list", "--config", str(config))
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("* compressor") for line in lines), result.stdout


async def test_unknown_engine_falls_back_to_the_compressor_with_a_warning(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url, context={"engine": "nosuch"})
    listing = await run_cli("plugins", "list", "--config", str(config))
    assert "context.engine 'nosuch' was not found" in listing.stdout
    chat = await run_cli("chat", "--config", str(config), stdin="hello\n")
    assert chat.code == 0, chat.stderr
    assert chat.replies() and "nosuch" in chat.stderr


async def test_secrets_never_reach_logs_the_database_or_exports(tmp_path, emulator, monkeypatch):
    secret = "sk-ant-SECRET-never-shown-0123456789"
    monkeypatch.setenv("HERMES_TEST_ANTHROPIC_KEY", secret)
    config = write_config(tmp_path, emulator.base_url, logging={"level": "DEBUG"})
    chat = await run_cli("chat", "--config", str(config), stdin="hello\n/status\n/usage\n")
    assert chat.code == 0, chat.stderr
    export = tmp_path / "export.jsonl"
    exported = await run_cli("sessions", "export", "1", "-o", str(export), "--config", str(config))
    checked = await run_cli("config", "check", "--config", str(config))
    assert exported.code == checked.code == 0
    for text in (chat.stdout, chat.stderr, exported.stderr, checked.stdout, export.read_text()):
        assert secret not in text
    for path in tmp_path.glob("hermes.db*"):
        assert secret.encode() not in path.read_bytes()


async def test_sessions_usage_prints_the_usage_report_with_where_the_money_went(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url)
    chat = await run_cli("chat", "--config", str(config), stdin="hello\nand again\n/usage\n")
    assert chat.code == 0, chat.stderr
    result = await run_cli("sessions", "usage", "1", "--config", str(config))
    assert result.code == 0, result.stderr
    assert "Usage of session #1 (2 API calls)" in result.stdout
    assert "Where the money went:" in result.stdout
    assert "visit-start cache writes: $" in result.stdout
    # The same report as /usage in the chat.
    assert result.stdout.strip() in chat.stdout
    missing = await run_cli("sessions", "usage", "7", "--config", str(config))
    assert missing.code == 1 and "no session #7" in missing.stderr


def test_version_names_the_installed_distribution() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli.main", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert re.fullmatch(r"hermes \d+\.\d+\.\d+\S*\n", done.stdout)


def test_a_reader_that_went_away_ends_a_command_quietly(tmp_path) -> None:
    config = write_config(tmp_path, "http://127.0.0.1:9")  # never contacted by `config check`
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has already exited: every write fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gateway.cli.main", "config", "check", "--config", str(config)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141
    assert done.stderr == ""


async def test_the_log_file_gets_one_json_object_per_event_and_no_secret(tmp_path, emulator):
    log_file = tmp_path / "logs" / "hermes.log"
    config = write_config(
        tmp_path,
        emulator.base_url,
        logging={"level": "INFO", "file": str(log_file), "format": "json"},
    )
    emulator.inject_fault("529", count=1)  # something worth an ERROR line
    result = await run_cli("chat", "--config", str(config), stdin="hello\n/new\nagain\n")
    assert result.code == 0, result.stderr
    entries = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert entries, "nothing was logged"
    assert all({"time", "level", "logger", "message"} <= entry.keys() for entry in entries)
    assert any(entry["level"] == "ERROR" for entry in entries)
    assert "test-key" not in log_file.read_text()
