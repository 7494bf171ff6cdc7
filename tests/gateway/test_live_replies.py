"""Replies shown while the model writes them: drafts in Telegram private chats, edited messages
in groups and on Discord, split at the platform limits, the final text complete.

The model emulator streams slowly (``stream_delay`` per SSE event), the real
python-telegram-bot and discord.py clients talk to the platform emulators, which record every
draft and edit with the time it landed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.telegram_text import utf16_len
from tests.gateway.conftest import ALICE, GatewayFactory, message_key, settled_inbound

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

GROUP = -1001234567890
BOT = "@hermes_test_bot"
DM_ID = 700000000000000030
DISCORD_ALICE = 1001
TELEGRAM_LIMIT = 4096
DISCORD_LIMIT = 2000
SLOW_EVENT_SECONDS = 0.05
"""Per SSE event (24 characters of text): about 500 characters a second."""
CURSOR = "…"
"""Ends the live text while it is being written."""
RATE_SLACK_SECONDS = 0.15
"""Jitter allowed between when an update was made and when the emulator took it."""


def long_reply(characters: int) -> str:
    """Plain paragraphs (nothing Markdown would change) of about ``characters``."""
    paragraphs: list[str] = []
    number = 0
    while sum(len(p) + 2 for p in paragraphs) < characters:
        number += 1
        paragraphs.append(f"Paragraph {number}" + " and the story goes on" * 8 + ".")
    return "\n\n".join(paragraphs)


def slow_reply(
    anthropic: AnthropicEmulator, characters: int, event_seconds: float = SLOW_EVENT_SECONDS
) -> str:
    """Make the model answer every request with a long reply, streamed slowly; returns it."""
    reply = long_reply(characters)
    anthropic.reply_fn = lambda body: reply
    anthropic.stream_delay = event_seconds
    return reply


def assert_at_most_one_per_second(times: Sequence[float], interval: float = 1.0) -> None:
    """Updates on average no closer than ``interval`` (n updates span n - 1 intervals)."""
    assert len(times) >= 2
    span = times[-1] - times[0]
    assert (len(times) - 1) * interval <= span + RATE_SLACK_SECONDS * len(times)


async def test_private_chat_shows_drafts_then_the_full_reply(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    reply = slow_reply(anthropic, 3000)
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "tell me a story")
        await settled_inbound(gateway, "telegram", message_key(update), timeout=60)
    drafts = telegram.live.drafts_in(ALICE)
    assert len(drafts) >= 2
    assert len({draft.draft_id for draft in drafts}) == 1
    assert all(reply.startswith(d.text.removesuffix(CURSOR).rstrip()) for d in drafts)
    assert_at_most_one_per_second([draft.at for draft in drafts])
    sent = telegram.sent_messages(ALICE)
    assert [message["text"] for message in sent] == [reply]
    assert telegram.live.edits_in(ALICE) == []


async def test_private_chat_reply_past_the_limit_ends_as_complete_parts(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    reply = slow_reply(anthropic, 6000, SLOW_EVENT_SECONDS / 2)
    async with run_gateway(telegram=telegram, model_settings={"max_tokens": 4000}) as gateway:
        update = telegram.push_message(ALICE, "tell me a long story")
        await settled_inbound(gateway, "telegram", message_key(update), timeout=60)
    sent = [m for m in telegram.sent_messages(ALICE) if not m.get("deleted")]
    texts = [message["text"] for message in sent]
    assert len(texts) >= 2
    assert all(utf16_len(text) <= TELEGRAM_LIMIT for text in texts)
    assert "\n\n".join(texts) == reply
    assert len(telegram.live.drafts_in(ALICE)) >= 2


async def test_group_reply_is_one_message_edited_as_it_grows(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    reply = slow_reply(anthropic, 5000, SLOW_EVENT_SECONDS * 2)
    async with run_gateway(telegram=telegram, model_settings={"max_tokens": 4000}) as gateway:
        update = telegram.push_message(
            GROUP, f"{BOT} tell me a story", user_id=ALICE, chat_type="supergroup"
        )
        await settled_inbound(gateway, "telegram", message_key(update), timeout=90)
    sent = telegram.sent_messages(GROUP)
    texts = [message["text"] for message in sent]
    assert len(texts) == 2
    assert all(utf16_len(text) <= TELEGRAM_LIMIT for text in texts)
    assert "\n\n".join(texts) == reply
    # One update of the chat edits the growing part, which ends with the typing cursor.
    intermediate = [edit for edit in telegram.live.edits_in(GROUP) if edit.text.endswith(CURSOR)]
    assert len(intermediate) >= 2
    assert_at_most_one_per_second([edit.at for edit in intermediate])
    assert telegram.live.drafts_in(GROUP) == []


async def test_discord_reply_is_edited_as_it_grows_and_split_at_2000(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    reply = slow_reply(anthropic, 3000)
    async with run_gateway(discord=discord_emulator) as gateway:
        message = discord_emulator.push_message(DM_ID, "tell me a story", author_id=DISCORD_ALICE)
        await settled_inbound(gateway, "discord", message["id"], timeout=60)
    sent = discord_emulator.sent_messages(DM_ID)
    parts = [message["content"] for message in sent]
    assert len(parts) == 2
    assert all(len(part) <= DISCORD_LIMIT for part in parts)
    assert "\n\n".join(parts) == reply
    edits = [
        edit
        for edit in discord_emulator.edited_messages
        if edit["channel_id"] == str(DM_ID) and edit["content"].endswith(CURSOR)
    ]
    assert len(edits) >= 2
    assert_at_most_one_per_second([edit["edited_at"] for edit in edits])


async def test_streaming_off_sends_the_reply_whole(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    reply = slow_reply(anthropic, 1500)
    async with run_gateway(telegram=telegram, telegram_settings={"streaming": False}) as gateway:
        update = telegram.push_message(ALICE, "tell me a story")
        await settled_inbound(gateway, "telegram", message_key(update), timeout=60)
    assert telegram.live.drafts_in(ALICE) == []
    assert [message["text"] for message in telegram.sent_messages(ALICE)] == [reply]


async def test_a_running_tool_shows_a_progress_line(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    anthropic.stream_delay = SLOW_EVENT_SECONDS * 6
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "calculate 6*7")
        await settled_inbound(gateway, "telegram", message_key(update), timeout=60)
    drafts = [draft.text for draft in telegram.live.drafts_in(ALICE)]
    assert any(text.endswith("⏳ running calculator…") for text in drafts), drafts
    final = telegram.sent_messages(ALICE)
    assert len(final) == 1
    assert "⏳" not in final[0]["text"]
    assert (ALICE, "typing") in telegram.chat_actions


async def test_a_live_message_deleted_meanwhile_is_replaced_by_the_final_reply(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    reply = slow_reply(anthropic, 1200, SLOW_EVENT_SECONDS * 2)
    async with run_gateway(discord=discord_emulator) as gateway:
        message = discord_emulator.push_message(DM_ID, "tell me a story", author_id=DISCORD_ALICE)
        [live] = await discord_emulator.wait_for_sent(DM_ID, 1, timeout=30)
        discord_emulator.delete_by_moderator(live["id"])
        await settled_inbound(gateway, "discord", message["id"], timeout=60)
    deleted = {str(i) for i in discord_emulator.rest.deleted_message_ids}
    remaining = [m for m in discord_emulator.sent_messages(DM_ID) if m["id"] not in deleted]
    assert [m["content"] for m in remaining] == [reply]
