"""The real daemon process, as an operator runs it at logging.level DEBUG, through a night of
bad answers and bad updates: it keeps answering, its log holds no user text and no secret, and
it exits non-zero once Telegram revokes its token."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from gateway.runtime.daemon import EXIT_NO_ADAPTER_LEFT
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, TELEGRAM_TOKEN_ENV, gateway_config
from tests.gateway.test_daemon_kill import START_TIMEOUT, start_daemon, wait_for

PRIVATE = "aubergine-lighthouse-sonata"
"""Part of every user text: must never reach the log."""
WAIT = 30.0


async def test_the_daemon_survives_poison_logs_nothing_private_and_exits_3_on_revocation(
    telegram: TelegramEmulator, anthropic: AnthropicEmulator, tmp_path: Path
) -> None:
    config = gateway_config(tmp_path, anthropic, telegram=telegram)
    data = config.model_dump(mode="json")
    data["logging"] = {"level": "DEBUG"}
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(data))
    log_path = tmp_path / "daemon.log"
    token = telegram.token

    daemon = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: telegram.calls_of("getUpdates"), START_TIMEOUT)
        telegram.push_message(ALICE, f"one {PRIVATE}")
        telegram.push_malformed_message(ALICE, f"two {PRIVATE}", missing=["chat"])
        telegram.push_raw_update("message", f"three {PRIVATE}")
        telegram.push_message(ALICE, f"four \ud800 {PRIVATE}")
        await wait_for(lambda: "four" in str(telegram.sent_messages(ALICE)), WAIT)
        telegram.serve_html(count=2)
        telegram.push_media(ALICE, "voice")
        await telegram.wait_for_sent(ALICE, len(telegram.sent_messages(ALICE)) + 1, timeout=WAIT)
        telegram.revoke_token()
        code = await asyncio.wait_for(daemon.wait(), WAIT)
    finally:
        if daemon.returncode is None:
            daemon.kill()
            await daemon.wait()
    log = log_path.read_text(encoding="utf-8", errors="replace")
    texts = " ".join(m["text"] for m in telegram.sent_messages(ALICE))
    assert code == EXIT_NO_ADAPTER_LEFT, log
    assert "Noted: one" in texts and "four" in texts
    assert "transcription is not configured" in texts  # a voice note is never met with silence
    assert PRIVATE not in log
    assert token not in log and "test-key" not in log
    assert log.count(f"rejected the bot token in {TELEGRAM_TOKEN_ENV}") == 1
    assert log.count("quarantined") == 2
