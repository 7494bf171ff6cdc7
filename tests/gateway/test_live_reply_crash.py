"""A daemon killed while a reply is shown live ends, after a restart, with one complete reply:
the message already in the chat is finished, never left beside a second copy."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import yaml

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, MODEL_KEY_ENV, TELEGRAM_TOKEN_ENV, gateway_config
from tests.gateway.test_daemon_kill import START_TIMEOUT, start_daemon, wait_for
from tests.gateway.test_live_replies import BOT, CURSOR, GROUP, slow_reply

SLOW_EVENT_SECONDS = 0.08
"""The first run writes slowly, so the kill lands mid-stream (after the first live edit)."""


def bot_messages(telegram: TelegramEmulator) -> list[dict[str, Any]]:
    return [m for m in telegram.sent_messages(GROUP) if not m.get("deleted")]


async def test_sigkill_mid_stream_then_restart_finishes_the_live_message(
    telegram: TelegramEmulator, anthropic: AnthropicEmulator, tmp_path: Path
) -> None:
    reply = slow_reply(anthropic, 3000, SLOW_EVENT_SECONDS)
    config = gateway_config(tmp_path, anthropic, telegram=telegram)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    assert os.environ[MODEL_KEY_ENV] and os.environ[TELEGRAM_TOKEN_ENV]
    log_path = tmp_path / "daemon.log"

    first = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: telegram.calls_of("getUpdates"), START_TIMEOUT)
        telegram.push_message(
            GROUP, f"{BOT} tell me a story", user_id=ALICE, chat_type="supergroup"
        )
        # An edit comes after the live message was recorded: the state recovery must handle.
        await wait_for(lambda: telegram.live.edits_in(GROUP), 60.0)
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    partial = bot_messages(telegram)
    assert len(partial) == 1
    assert partial[0]["text"].endswith(CURSOR)

    anthropic.stream_delay = 0.0
    second = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: bot_messages(telegram)[0]["text"] == reply, START_TIMEOUT)
        telegram.push_message(GROUP, f"{BOT} and this", user_id=ALICE, chat_type="supergroup")
        await telegram.wait_for_sent(GROUP, 2, timeout=30)
    finally:
        second.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(second.wait(), 30)
    texts = [message["text"] for message in bot_messages(telegram)]
    assert len(texts) == 2, log_path.read_text()
    assert texts[0] == reply
    assert texts[1] == reply  # the next message is answered normally, once
    assert code == 0
