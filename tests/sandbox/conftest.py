"""Fixtures shared by the emulator tests: offline, a real PTB Bot on the emulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from telegram import Bot

from sandbox.telegram_api import TelegramEmulator


@pytest.fixture(autouse=True)
def _local_network_only(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # RetryAfter.retry_after as a timedelta


@pytest.fixture
async def bot(emulator: TelegramEmulator) -> AsyncIterator[Bot]:
    """python-telegram-bot's Bot against the module's ``emulator`` fixture."""
    async with Bot(
        emulator.token, base_url=emulator.base_url, base_file_url=emulator.base_file_url
    ) as client:
        yield client
