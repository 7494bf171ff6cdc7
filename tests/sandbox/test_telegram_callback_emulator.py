"""The Telegram emulator's inline keyboards and callback queries, driven by the real
python-telegram-bot client: limits and errors as Telegram answers them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest

from sandbox.telegram_api import TelegramEmulator

CHAT = 4242


@pytest.fixture
async def emulator() -> AsyncIterator[TelegramEmulator]:
    emu = TelegramEmulator()
    await emu.start()
    try:
        yield emu
    finally:
        await emu.stop()


def keyboard(*datas: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton(d[:10], callback_data=d) for d in datas]])


async def test_a_press_is_an_update_only_when_callback_queries_are_allowed(
    emulator: TelegramEmulator,
) -> None:
    emulator.push_message(CHAT, "hi")
    async with Bot(emulator.token, base_url=emulator.base_url) as bot:
        [hello] = await bot.get_updates(timeout=0)
        sent = await bot.send_message(CHAT, "pick", reply_markup=keyboard("a:1", "b:2"))
        emulator.press_button(CHAT, sent.message_id, "b:2", user_id=7, username="bob")
        assert await bot.get_updates(offset=hello.update_id + 1, allowed_updates=["message"]) == ()

        emulator.press_button(CHAT, sent.message_id, "a:1")
        [press] = await bot.get_updates(
            offset=hello.update_id + 1, allowed_updates=["message", "callback_query"]
        )
        query = press.callback_query
        assert query is not None and query.data == "a:1" and query.from_user.id == CHAT
        assert query.message is not None and query.message.message_id == sent.message_id

        assert await bot.answer_callback_query(query.id, text="done")
        with pytest.raises(BadRequest, match="query id is invalid"):
            await bot.answer_callback_query(query.id)
        assert emulator.callback_answers[-1]["text"] == "done"

        await bot.edit_message_reply_markup(CHAT, sent.message_id)
        shown = emulator.message(CHAT, sent.message_id)
        assert shown is not None and "reply_markup" not in shown
        with pytest.raises(KeyError):
            emulator.press_button(CHAT, sent.message_id, "a:1")


async def test_callback_data_over_64_bytes_is_refused(emulator: TelegramEmulator) -> None:
    emulator.push_message(CHAT, "hi")
    async with Bot(emulator.token, base_url=emulator.base_url) as bot:
        with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
            await bot.send_message(CHAT, "pick", reply_markup=keyboard("x" * 65))


async def test_an_edit_without_reply_markup_removes_the_keyboard(
    emulator: TelegramEmulator,
) -> None:
    emulator.push_message(CHAT, "hi")
    async with Bot(emulator.token, base_url=emulator.base_url) as bot:
        sent = await bot.send_message(CHAT, "pick", reply_markup=keyboard("a"))
        await bot.edit_message_text("picked", chat_id=CHAT, message_id=sent.message_id)
    shown = emulator.message(CHAT, sent.message_id)
    assert shown is not None and shown["text"] == "picked" and "reply_markup" not in shown
