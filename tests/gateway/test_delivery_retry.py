"""Sends that fail are retried while the failure is transient, in order per chat; a permanent
refusal ends the message failed with its reason, logged once, without a second model call."""

from __future__ import annotations

import logging

import pytest

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, settled_inbound

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

BOB = 43
"""A second private chat, which must not notice Alice's failures."""
QUICK_RETRIES = {"delivery_backoff_seconds": 0.05}
OPEN_TO_ALL = {"allow_all": True}
DM_ID = 700000000000000030


def platform_id(chat_id: int, update: dict[str, object]) -> str:
    message = update["message"]
    assert isinstance(message, dict)
    return f"{chat_id}:{message['message_id']}"


async def test_a_reply_failing_five_times_with_500_is_delivered_once_and_in_order(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    telegram.inject_fault("sendMessage", status=500, count=5, chat_id=ALICE)
    async with run_gateway(telegram=telegram, gateway_settings=QUICK_RETRIES) as gateway:
        first = telegram.push_message(ALICE, "first question")
        second = telegram.push_message(ALICE, "second question")
        await telegram.wait_for_sent(ALICE, 2)
        records = [
            await settled_inbound(gateway, "telegram", platform_id(ALICE, update))
            for update in (first, second)
        ]
    texts = [m["text"] for m in telegram.sent_messages(ALICE)]
    attempts = [p for p in telegram.calls_of("sendMessage") if int(p["chat_id"]) == ALICE]
    assert [text[:14] for text in texts] == ["Noted: first q", "Noted: second "]
    assert len(attempts) == 5 + 2
    assert [r.status for r in records] == ["done", "done"]
    assert len(anthropic.requests) == 2


async def test_a_chat_whose_reply_is_being_retried_does_not_hold_up_other_chats(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    # Six failures with a doubling backoff from 0.05 s: Alice waits over 3 s in all.
    telegram.inject_fault("sendMessage", status=502, count=6, chat_id=ALICE)
    settings = {"telegram_settings": OPEN_TO_ALL, "gateway_settings": QUICK_RETRIES}
    async with run_gateway(telegram=telegram, **settings) as gateway:
        waiting = telegram.push_message(ALICE, "slow lane")
        await telegram.wait_for_calls("sendMessage", 2)  # Alice's reply is being retried
        other = telegram.push_message(BOB, "fast lane", user_id=BOB, username="bob")
        await telegram.wait_for_sent(BOB, 1)
        meanwhile = await gateway.app.repo.get_inbound("telegram", platform_id(ALICE, waiting))
        done = await settled_inbound(gateway, "telegram", platform_id(ALICE, waiting))
        answered = await settled_inbound(gateway, "telegram", platform_id(BOB, other))
    assert meanwhile is not None and meanwhile.status == "processing"
    assert (done.status, answered.status) == ("done", "done")
    assert len(telegram.sent_messages(ALICE)) == 1


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ({"status": 403}, "bot was blocked by the user"),
        ({"status": 400, "description": "Bad Request: chat not found"}, "chat not found"),
    ],
)
async def test_a_refused_reply_fails_with_its_reason_once_and_other_chats_carry_on(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
    fault: dict[str, object],
    reason: str,
) -> None:
    telegram.inject_fault("sendMessage", chat_id=ALICE, **fault)  # type: ignore[arg-type]
    settings = {"telegram_settings": OPEN_TO_ALL, "gateway_settings": QUICK_RETRIES}
    with caplog.at_level(logging.INFO):
        async with run_gateway(telegram=telegram, **settings) as gateway:
            blocked = telegram.push_message(ALICE, "are you there?")
            other = telegram.push_message(BOB, "hello", user_id=BOB, username="bob")
            await telegram.wait_for_sent(BOB, 1)
            failed = await settled_inbound(gateway, "telegram", platform_id(ALICE, blocked))
            answered = await settled_inbound(gateway, "telegram", platform_id(BOB, other))
            reply = await gateway.app.repo.get_reply(failed.reply_id or 0)
    assert failed.status == "failed"
    assert failed.failure is not None and reason in failed.failure.lower()
    assert reply is not None and reply.status == "failed"
    assert answered.status == "done"
    assert telegram.sent_messages(ALICE) == []
    assert len(telegram.calls_of("sendMessage")) == 2  # one attempt each: no retry
    assert [r.last_user_text for r in anthropic.requests].count("are you there?") == 1
    logged = [r for r in caplog.records if "not delivered" in r.getMessage()]
    assert len(logged) == 1 and logged[0].levelno == logging.ERROR
    assert "are you there?" not in caplog.text


async def test_a_429_beyond_the_rate_limiters_retries_waits_and_is_delivered_once(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    # The client's limiter retries a 429 three times itself before it gives up.
    telegram.inject_fault("sendMessage", status=429, retry_after=1, count=5, chat_id=ALICE)
    async with run_gateway(telegram=telegram, gateway_settings=QUICK_RETRIES) as gateway:
        update = telegram.push_message(ALICE, "busy day")
        done = await settled_inbound(gateway, "telegram", platform_id(ALICE, update), 30)
    assert done.status == "done"
    assert [m["text"][:15] for m in telegram.sent_messages(ALICE)] == ["Noted: busy day"]


async def test_dropped_connections_while_sending_are_retried_and_the_reply_arrives_once(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    telegram.drop_connections("sendMessage", 2, chat_id=ALICE)
    async with run_gateway(telegram=telegram, gateway_settings=QUICK_RETRIES) as gateway:
        update = telegram.push_message(ALICE, "still there?")
        done = await settled_inbound(gateway, "telegram", platform_id(ALICE, update))
    assert done.status == "done"
    assert len(telegram.sent_messages(ALICE)) == 1


async def test_a_send_still_failing_when_the_retry_time_is_up_ends_failed_with_the_reason(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    telegram.inject_fault("sendMessage", status=502, count=1000, chat_id=ALICE)
    short = {"delivery_backoff_seconds": 0.05, "delivery_retry_seconds": 0.5}
    async with run_gateway(telegram=telegram, gateway_settings=short) as gateway:
        update = telegram.push_message(ALICE, "hello?")
        failed = await settled_inbound(gateway, "telegram", platform_id(ALICE, update))
    assert failed.status == "failed"
    assert failed.failure is not None and "still failing after" in failed.failure
    assert "Bad Gateway" in failed.failure
    assert len(anthropic.requests) == 1


async def test_discord_sends_failing_with_503_or_a_dropped_connection_are_retried(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    discord_emulator.fail_sends(DM_ID, 503, count=2)
    discord_emulator.fail_sends(DM_ID, 0, count=1)
    async with run_gateway(discord=discord_emulator, gateway_settings=QUICK_RETRIES) as gateway:
        pushed = discord_emulator.push_message(DM_ID, "hello discord", author_id=1001)
        done = await settled_inbound(gateway, "discord", str(pushed["id"]))
    assert done.status == "done"
    assert [m["content"][:19] for m in discord_emulator.sent_messages(DM_ID)] == [
        "Noted: hello discor"
    ]
    assert len(anthropic.requests) == 1


async def test_a_discord_channel_the_bot_lost_access_to_fails_without_retries(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    discord_emulator.fail_sends(DM_ID, 403, count=1)
    async with run_gateway(discord=discord_emulator, gateway_settings=QUICK_RETRIES) as gateway:
        pushed = discord_emulator.push_message(DM_ID, "hello discord", author_id=1001)
        failed = await settled_inbound(gateway, "discord", str(pushed["id"]))
    assert failed.status == "failed"
    assert failed.failure is not None and "HTTP 403" in failed.failure
    assert discord_emulator.sent_messages(DM_ID) == []
    assert len(anthropic.requests) == 1
