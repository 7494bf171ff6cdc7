"""The real daemon process, killed with SIGKILL mid-turn and restarted, answers exactly once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import yaml

from gateway.store.db import open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, MODEL_KEY_ENV, TELEGRAM_TOKEN_ENV, gateway_config

PROJECT_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0  # importing the SDKs in a fresh interpreter is slow on a busy machine


async def start_daemon(config_path: Path, log_path: Path) -> asyncio.subprocess.Process:
    log = log_path.open("ab")
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway.cli.main",
            "gateway",
            "run",
            "--config",
            str(config_path),
            cwd=PROJECT_ROOT,
            env=dict(os.environ),
            stdout=log,
            stderr=log,
        )
    finally:
        log.close()


async def wait_for(condition: object, timeout: float) -> None:  # noqa: ASYNC109
    async with asyncio.timeout(timeout):
        # The emulators offer no event for these: poll their records.
        while not condition():  # type: ignore[operator]  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_sigkill_during_a_turn_then_restart_answers_the_message_exactly_once(
    telegram: TelegramEmulator, anthropic: AnthropicEmulator, tmp_path: Path
) -> None:
    config = gateway_config(tmp_path, anthropic, telegram=telegram)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    assert os.environ[MODEL_KEY_ENV] and os.environ[TELEGRAM_TOKEN_ENV]
    log_path = tmp_path / "daemon.log"
    anthropic.inject_fault("slow", delay=3)

    first = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: telegram.calls_of("getUpdates"), START_TIMEOUT)
        telegram.push_message(ALICE, "answer me once")
        await wait_for(lambda: (ALICE, "typing") in telegram.chat_actions, 10.0)
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    assert telegram.sent_messages(ALICE) == []

    second = await start_daemon(config_path, log_path)
    try:
        await telegram.wait_for_sent(ALICE, 1, timeout=START_TIMEOUT)
        telegram.push_message(ALICE, "and this")
        await telegram.wait_for_sent(ALICE, 2)
    finally:
        second.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(second.wait(), 30)
    texts = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert len(texts) == 2, log_path.read_text()
    assert texts[0].startswith("Noted: answer me once")
    assert texts[1].startswith("Noted: and this")
    assert code == 0
    assert "telegram: connected as @hermes_test_bot" in log_path.read_text()
    assert "event loop: uvloop" in log_path.read_text()  # the daemon's default where installed
    # Nothing lost, nothing doubled in the store either: the interrupted turn was resumed.
    store = await open_store(config.database.url or "")
    try:
        repo = Repository(store)
        [session] = await repo.list_sessions()
        users = [m.content for m in await repo.all_messages(session.id) if m.role == "user"]
    finally:
        await store.close()
    assert users == ["answer me once", "and this"]
