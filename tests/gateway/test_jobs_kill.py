"""The real daemon, killed with SIGKILL while a job's turn runs at its due time, restarted:
the job is answered exactly once (its run was claimed and recorded in one commit)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import yaml

from gateway.store.db import open_store
from gateway.store.job_records import job_run_id
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, MODEL_KEY_ENV, gateway_config
from tests.gateway.test_daemon_kill import START_TIMEOUT, start_daemon, wait_for

PROMPT = "Remind Alice to stretch"
DELAY_SECONDS = 3
"""Real seconds: the daemon runs on the machine's clock."""


async def claimed(url: str, run_id: str, timeout: float = 30.0) -> None:  # noqa: ASYNC109
    """Wait until the daemon has claimed the job's run (recorded it as an inbound message)."""
    store = await open_store(url)
    try:
        repo = Repository(store)
        async with asyncio.timeout(timeout):
            # The daemon is another process: read the store until the row is there.
            while await repo.get_inbound("telegram", run_id) is None:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
    finally:
        await store.close()


async def test_sigkill_while_a_job_runs_then_restart_answers_it_exactly_once(
    telegram: TelegramEmulator, anthropic: AnthropicEmulator, tmp_path: Path
) -> None:
    config = gateway_config(tmp_path, anthropic, telegram=telegram)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    assert os.environ[MODEL_KEY_ENV]
    log_path = tmp_path / "daemon.log"
    args = json.dumps({"prompt": PROMPT, "delay_seconds": DELAY_SECONDS})

    # Only the job's model call is slow: it is still running when the daemon is killed.
    anthropic.inject_fault("slow", contains="[Scheduled job", delay=5)
    first = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: telegram.calls_of("getUpdates"), START_TIMEOUT)
        telegram.push_message(ALICE, f"[[tool:schedule {args}]]")
        await telegram.wait_for_sent(ALICE, 1, timeout=30)
        await claimed(config.database.url or "", job_run_id(1, 1))
        await wait_for(lambda: telegram.chat_actions.count((ALICE, "typing")) >= 2, 30.0)
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    assert len(telegram.sent_messages(ALICE)) == 1
    # Killed mid-turn: the job's model call never completed.
    assert not any(r.last_user_text.startswith("[Scheduled job") for r in anthropic.requests)

    second = await start_daemon(config_path, log_path)
    try:
        await telegram.wait_for_sent(ALICE, 2, timeout=START_TIMEOUT)
        telegram.push_message(ALICE, "and this")
        await telegram.wait_for_sent(ALICE, 3)
    finally:
        second.send_signal(signal.SIGTERM)
        await second.wait()
    texts = [str(m["text"]) for m in telegram.sent_messages(ALICE)]
    assert len(texts) == 3, log_path.read_text()
    assert texts[0].startswith("Tool result: Scheduled job 1")
    assert texts[1].startswith("Noted: [Scheduled job 1, due ") and PROMPT in texts[1]
    assert texts[2].startswith("Noted: and this")
    store = await open_store(config.database.url or "")
    try:
        job = await Repository(store).get_job(1)
    finally:
        await store.close()
    assert job is not None and (job.status, job.runs) == ("done", 1)
