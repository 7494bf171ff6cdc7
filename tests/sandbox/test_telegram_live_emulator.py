"""The emulated Bot API's live-reply methods, driven by python-telegram-bot: drafts only in
private chats, edits with Telegram's limits and errors, both recorded with their times."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from telegram import Bot
from telegram.constants import ParseMode
from telegram.error import BadRequest, RetryAfter

from sandbox.telegram_api import TelegramEmulator

ALICE = 42
GROUP = -1001234567890
GROUP_SENDS_PER_MINUTE = 20


@pytest.fixture
async def emulator() -> AsyncIterator[TelegramEmulator]:
    emu = TelegramEmulator()
    await emu.start()
    try:
        yield emu
    finally:
        await emu.stop()


async def test_drafts_are_recorded_for_private_chats_and_refused_elsewhere(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    emulator.push_message(ALICE, "hi")
    emulator.push_message(GROUP, "hi all", user_id=ALICE, chat_type="supergroup")

    assert await bot.send_message_draft(ALICE, 7, "Hel") is True
    assert await bot.send_message_draft(ALICE, 7, "Hello *there*", parse_mode=ParseMode.MARKDOWN)
    with pytest.raises(BadRequest, match=r"(?i)textdraft_peer_invalid"):
        await bot.send_message_draft(GROUP, 7, "not here")
    with pytest.raises(BadRequest, match=r"(?i)draft_id must be non-zero"):
        await bot.send_message_draft(ALICE, 0, "no id")
    with pytest.raises(BadRequest, match="too long"):
        await bot.send_message_draft(ALICE, 7, "x" * 4097)

    drafts = emulator.live.drafts_in(ALICE)
    assert [(d.draft_id, d.text) for d in drafts] == [(7, "Hel"), (7, "Hello there")]
    assert drafts[0].at <= drafts[1].at
    assert emulator.sent_messages(ALICE) == []  # a draft is no message


async def test_edits_follow_telegrams_limits_and_are_recorded(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    emulator.push_message(ALICE, "hi")
    sent = await bot.send_message(ALICE, "part")

    await bot.edit_message_text("part one", chat_id=ALICE, message_id=sent.message_id)
    with pytest.raises(BadRequest, match="not modified"):
        await bot.edit_message_text("part one", chat_id=ALICE, message_id=sent.message_id)
    with pytest.raises(BadRequest, match="too long"):
        await bot.edit_message_text("😀" * 2049, chat_id=ALICE, message_id=sent.message_id)
    with pytest.raises(BadRequest, match="parse entities"):
        await bot.edit_message_text(
            "<b>open", chat_id=ALICE, message_id=sent.message_id, parse_mode=ParseMode.HTML
        )

    assert [edit.text for edit in emulator.live.edits_in(ALICE)] == ["part one"]
    assert emulator.sent_messages(ALICE)[0]["text"] == "part one"


async def test_edits_in_a_group_count_against_its_flood_limit() -> None:
    emulator = TelegramEmulator(enforce_rate_limits=True)
    await emulator.start()
    try:
        emulator.push_message(GROUP, "hi all", user_id=ALICE, chat_type="supergroup")
        async with Bot(emulator.token, base_url=emulator.base_url) as group_bot:
            sent = await group_bot.send_message(GROUP, "edit 0")
            for number in range(1, GROUP_SENDS_PER_MINUTE):
                await group_bot.edit_message_text(
                    f"edit {number}", chat_id=GROUP, message_id=sent.message_id
                )
            with pytest.raises(RetryAfter):
                await group_bot.edit_message_text(
                    "one too many", chat_id=GROUP, message_id=sent.message_id
                )
    finally:
        await emulator.stop()
