"""The Telegram intake's decisions, update by update: hand over, ignore, retry or quarantine.

A real python-telegram-bot Bot, logged in to the emulator, parses the updates; the runner's
callback is a plain function here, so a recording failure can be made to happen on demand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from telegram import Bot

from gateway.messages.inbound import InboundMessage
from gateway.messages.quarantine import DeadLetter
from gateway.platforms.telegram.intake import (
    POISON_ATTEMPTS,
    MessageReader,
    PoisonUpdate,
    UpdateIntake,
    parse_update,
)
from sandbox.telegram_api import TelegramEmulator

ALICE = 42


@pytest.fixture
async def bot() -> AsyncIterator[tuple[TelegramEmulator, Bot]]:
    async with (
        TelegramEmulator() as emulator,
        Bot(emulator.token, base_url=emulator.base_url) as client,
    ):
        yield emulator, client


def intake_for(client: Bot, deliver: Any, kept: list[DeadLetter]) -> UpdateIntake:
    async def keep(letter: DeadLetter) -> None:
        kept.append(letter)

    reader = MessageReader(lambda: client, per_user_sessions=False)
    return UpdateIntake(lambda: client, reader, lambda: deliver, keep)


async def test_an_update_that_cannot_be_recorded_is_retried_then_quarantined(
    bot: tuple[TelegramEmulator, Bot],
) -> None:
    emulator, client = bot
    raw = emulator.push_message(ALICE, "hello")
    kept: list[DeadLetter] = []

    async def failing(message: InboundMessage) -> None:
        raise OSError("disk I/O error while writing 'hello'")

    intake = intake_for(client, failing, kept)
    for _ in range(POISON_ATTEMPTS - 1):
        with pytest.raises(OSError):
            await intake.take(raw)
    await intake.take(raw)
    assert [letter.reason for letter in kept] == [
        f"not recorded after {POISON_ATTEMPTS} attempts: OSError"
    ]
    assert kept[0].ref == str(raw["update_id"]) and "disk I/O" in kept[0].detail
    assert "hello" not in kept[0].reason


async def test_an_update_recorded_on_a_later_try_is_handed_over_and_not_quarantined(
    bot: tuple[TelegramEmulator, Bot],
) -> None:
    emulator, client = bot
    raw = emulator.push_message(ALICE, "hello")
    recorded: list[InboundMessage] = []
    kept: list[DeadLetter] = []
    failures = [OSError("locked")] * (POISON_ATTEMPTS - 1)

    async def flaky(message: InboundMessage) -> None:
        if failures:
            raise failures.pop()
        recorded.append(message)

    intake = intake_for(client, flaky, kept)
    for _ in range(POISON_ATTEMPTS - 1):
        with pytest.raises(OSError):
            await intake.take(raw)
    await intake.take(raw)
    assert [m.text for m in recorded] == ["hello"] and kept == []


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ([1, 2], "not an update object"),
        ({"message": {}}, "not an update object"),
        ({"update_id": 1, "message": None}, "message is not an object"),
        ({"update_id": 1, "message": "text"}, "unparseable update: AttributeError"),
    ],
)
async def test_what_is_not_a_complete_update_is_poison(
    bot: tuple[TelegramEmulator, Bot], raw: Any, reason: str
) -> None:
    _, client = bot
    with pytest.raises(PoisonUpdate) as caught:
        parse_update(raw, client)
    assert caught.value.reason == reason


async def test_updates_of_other_kinds_and_service_messages_are_ignored_quietly(
    bot: tuple[TelegramEmulator, Bot],
) -> None:
    emulator, client = bot
    kept: list[DeadLetter] = []
    recorded: list[InboundMessage] = []

    async def record(message: InboundMessage) -> None:
        recorded.append(message)

    intake = intake_for(client, record, kept)
    joined = emulator.push_malformed_message(ALICE, "", missing=["text"])
    joined["message"]["new_chat_members"] = [{"id": 5, "is_bot": False, "first_name": "E"}]
    await intake.take(joined)
    await intake.take({"update_id": 77, "edited_message": joined["message"]})
    assert recorded == [] and kept == []
