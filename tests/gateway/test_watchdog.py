"""The Telegram polling watchdog restarts a poll that went silent, and only such a poll.

A long poll that hangs without ever answering (a dead connection overnight) is the failure the
watchdog exists for; the emulator's ``stall_polls`` imitates it. The stall is shorter than
python-telegram-bot's own read timeout, so any restart seen here is the watchdog's doing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.platforms.telegram.adapter import TelegramAdapter
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, all_quiet, telegram_adapter

POLL_TIMEOUT_SECONDS = 1
WATCHDOG_SECONDS = 1.5
"""Above the poll timeout: a healthy idle poll answers (empty) before the watchdog would fire."""
STALL_SECONDS = 3.0
"""Longer than the watchdog limit, shorter than the client's read timeout (poll + 5 s)."""
IDLE_SECONDS = 3.5
"""Several healthy idle polls in a row."""
WAIT = 10.0

WATCHDOG_SETTINGS: dict[str, Any] = {
    "watchdog_seconds": WATCHDOG_SECONDS,
    "poll_timeout": POLL_TIMEOUT_SECONDS,
}


async def wait_for_restart(adapter: TelegramAdapter) -> None:
    async with asyncio.timeout(WAIT):
        # The adapter offers no event for restarts: watch its counter.
        while adapter.polling_restarts == 0:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_stalled_poll_is_restarted_and_a_message_sent_afterwards_is_answered(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    async with run_gateway(telegram=telegram, telegram_settings=WATCHDOG_SETTINGS) as gateway:
        adapter = telegram_adapter(gateway)
        telegram.push_message(ALICE, "before the stall")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        restarts_while_healthy = adapter.polling_restarts
        telegram.stall_polls(STALL_SECONDS)
        polls_before_restart = len(telegram.calls_of("getUpdates"))
        await wait_for_restart(adapter)
        await telegram.wait_for_calls("getUpdates", polls_before_restart + 1, timeout=WAIT)
        telegram.push_message(ALICE, "after the restart")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        await all_quiet(gateway, telegram)
    assert restarts_while_healthy == 0
    assert adapter.polling_restarts >= 1
    assert len(telegram.sent_messages(ALICE)) == 2
    assert sent[1]["text"].startswith("Noted: after the restart")


async def test_healthy_idle_polling_is_never_restarted(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    async with run_gateway(telegram=telegram, telegram_settings=WATCHDOG_SETTINGS) as gateway:
        adapter = telegram_adapter(gateway)
        await asyncio.sleep(IDLE_SECONDS)
        telegram.push_message(ALICE, "still there?")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
    assert adapter.polling_restarts == 0
    assert sent[0]["text"].startswith("Noted: still there?")
