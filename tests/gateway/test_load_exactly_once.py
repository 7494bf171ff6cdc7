"""Under load, every Telegram message is answered exactly once and stored exactly once.

A small version of ``bench/gateway_load.py``: many private chats write at the same time through
the real python-telegram-bot client, the Telegram emulator redelivers some updates (before and
after they were answered), and one chat sends a burst without waiting, which its worker merges.
"""

from __future__ import annotations

import asyncio

from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import GatewayFactory, all_quiet

CHATS = 20
MESSAGES_PER_CHAT = 5
FIRST_CHAT = 5000
BURST_CHAT = 6000
BURST_SIZE = 6
REDELIVER_IN_FLIGHT = range(0, 3)
"""Chats (by index) whose third update is redelivered right after it was pushed."""
REDELIVER_ANSWERED = range(3, 6)
"""Chats (by index) whose first update is redelivered after their fourth reply."""
SLOW_FIRST_TURN_SECONDS = 0.5
"""Keeps the burst's first turn running while the rest of the burst arrives."""
WAIT = 30.0


def text_of(chat_id: int, index: int) -> str:
    return f"chat {chat_id} message {index}"


async def write_like_a_person(telegram: TelegramEmulator, chat_id: int, position: int) -> list[int]:
    """Send the chat's messages one after another, each after the previous reply arrived.

    Some chats get an update redelivered; returns the pushed message ids in order.
    """
    message_ids = []
    updates = []
    for index in range(MESSAGES_PER_CHAT):
        update = telegram.push_message(chat_id, text_of(chat_id, index), user_id=chat_id)
        updates.append(update)
        message_ids.append(update["message"]["message_id"])
        if index == 2 and position in REDELIVER_IN_FLIGHT:
            telegram.redeliver(update["update_id"])
        await telegram.wait_for_sent(chat_id, index + 1, timeout=WAIT)
        if index == 3 and position in REDELIVER_ANSWERED:
            telegram.redeliver(updates[0]["update_id"])
    return message_ids


async def stored_user_messages(gateway: Gateway, chat_id: int) -> list[tuple[str | None, str]]:
    """(platform message id, text) of every user message stored for the chat's session."""
    repo = gateway.app.repo
    [session] = await repo.list_sessions(key=f"telegram:{chat_id}")
    stored = await repo.all_messages(session.id)
    return [(m.platform_message_id, str(m.content)) for m in stored if m.role == "user"]


async def inbound_outcomes(
    gateway: Gateway, chat_id: int, message_ids: list[int]
) -> list[tuple[str, int]]:
    """(status, number of reply ids) of each message's inbound record."""
    outcomes = []
    for message_id in message_ids:
        record = await gateway.app.repo.get_inbound("telegram", f"{chat_id}:{message_id}")
        assert record is not None
        outcomes.append((record.status, len(record.reply_platform_ids)))
    return outcomes


async def first_turn_running(telegram: TelegramEmulator, chat_id: int) -> None:
    """Return once the bot shows "typing" in the chat: a turn has started."""
    async with asyncio.timeout(WAIT):
        # The emulator offers no event for chat actions: poll its record.
        while (chat_id, "typing") not in telegram.chat_actions:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_concurrent_chats_with_redelivered_updates_get_every_message_answered_once(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    chats = [FIRST_CHAT + position for position in range(CHATS)]
    async with run_gateway(telegram=telegram, telegram_settings={"allow_all": True}) as gateway:
        pushed = await asyncio.gather(
            *(write_like_a_person(telegram, chat, position) for position, chat in enumerate(chats))
        )
        await all_quiet(gateway, telegram)
        stored = {chat: await stored_user_messages(gateway, chat) for chat in chats}
        outcomes = {
            chat: await inbound_outcomes(gateway, chat, ids)
            for chat, ids in zip(chats, pushed, strict=True)
        }
        unfinished = await gateway.app.repo.pending_inbound("telegram")
    for chat, message_ids in zip(chats, pushed, strict=True):
        replies = [sent["text"] for sent in telegram.sent_messages(chat)]
        assert len(replies) == MESSAGES_PER_CHAT, (chat, replies)
        for index, reply in enumerate(replies):
            assert reply.startswith(f"Noted: {text_of(chat, index)}"), (chat, index, reply)
        assert stored[chat] == [
            (f"{chat}:{message_id}", text_of(chat, index))
            for index, message_id in enumerate(message_ids)
        ]
        assert outcomes[chat] == [("done", 1)] * MESSAGES_PER_CHAT
    assert unfinished == []
    assert len(anthropic.requests) == CHATS * MESSAGES_PER_CHAT


async def test_burst_sent_without_waiting_is_merged_and_each_message_handled_once(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    burst = [f"burst part {index}" for index in range(BURST_SIZE)]
    anthropic.inject_fault("slow", delay=SLOW_FIRST_TURN_SECONDS, contains=burst[0])
    async with run_gateway(telegram=telegram, telegram_settings={"allow_all": True}) as gateway:
        updates = [telegram.push_message(BURST_CHAT, text, user_id=BURST_CHAT) for text in burst]
        await first_turn_running(telegram, BURST_CHAT)
        telegram.redeliver(updates[0]["update_id"])
        telegram.redeliver(updates[-1]["update_id"])
        await telegram.wait_for_sent(BURST_CHAT, 2, timeout=WAIT)
        await all_quiet(gateway, telegram)
        stored = await stored_user_messages(gateway, BURST_CHAT)
        message_ids = [update["message"]["message_id"] for update in updates]
        outcomes = await inbound_outcomes(gateway, BURST_CHAT, message_ids)
    merged_rest = "\n\n".join(burst[1:])
    assert [request.last_user_text for request in anthropic.requests] == [burst[0], merged_rest]
    assert len(telegram.sent_messages(BURST_CHAT)) == 2
    assert [text for _, text in stored] == [burst[0], merged_rest]
    assert [status for status, _ in outcomes] == ["done"] * BURST_SIZE
    # The reply ids sit on the message that closed each turn: the first and the last.
    assert [count for _, count in outcomes] == [1, 0, 0, 0, 0, 1]
