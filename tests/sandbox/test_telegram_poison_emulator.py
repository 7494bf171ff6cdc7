"""The Telegram emulator's update-side faults, as the real python-telegram-bot client sees them."""

from __future__ import annotations

import pytest
from telegram import Bot
from telegram.error import InvalidToken, TelegramError

from sandbox.telegram_api import TelegramEmulator
from sandbox.telegram_poison import MEDIA

ALICE = 42


async def test_html_bodies_answer_the_next_polls_with_200_then_json_again() -> None:
    async with TelegramEmulator() as emu, Bot(emu.token, base_url=emu.base_url) as bot:
        emu.serve_html(count=2)
        for _ in range(2):
            with pytest.raises(TelegramError, match="Invalid server response"):
                await bot.get_updates(timeout=0)
        assert await bot.get_updates(timeout=0) == ()


async def test_a_revoked_token_is_refused_on_every_call() -> None:
    async with TelegramEmulator() as emu, Bot(emu.token, base_url=emu.base_url) as bot:
        emu.revoke_token()
        for _ in range(2):
            with pytest.raises(InvalidToken):
                await bot.get_me()


@pytest.mark.parametrize("kind", sorted(MEDIA))
async def test_pushed_media_parse_as_their_kind_with_the_caption(kind: str) -> None:
    async with TelegramEmulator() as emu, Bot(emu.token, base_url=emu.base_url) as bot:
        emu.push_media(ALICE, kind, caption="look")
        (update,) = await bot.get_updates(timeout=0)
    message = update.message
    assert message is not None and message.text is None
    assert getattr(message, kind)
    assert message.caption == "look"


async def test_a_malformed_message_is_delivered_as_pushed_and_breaks_strict_parsing() -> None:
    async with TelegramEmulator() as emu, Bot(emu.token, base_url=emu.base_url) as bot:
        missing = emu.push_malformed_message(ALICE, "no date", missing=["date", "from"])
        with pytest.raises(KeyError, match="date"):  # PTB parses the whole batch at once
            await bot.get_updates(timeout=0)
    assert "date" not in missing["message"] and "from" not in missing["message"]
    assert missing["message"]["text"] == "no date"


async def test_a_raw_update_carries_exactly_the_payload_given() -> None:
    async with TelegramEmulator() as emu, Bot(emu.token, base_url=emu.base_url) as bot:
        wrong = emu.push_raw_update("message", "not a message")
        with pytest.raises(AttributeError):
            await bot.get_updates(timeout=0)
    assert wrong == {"update_id": wrong["update_id"], "message": "not a message"}
