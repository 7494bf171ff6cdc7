"""After a restart, recorded-but-unanswered messages are answered, answered ones are not resent."""

from __future__ import annotations

from pathlib import Path

from gateway.messages.inbound import InboundMessage
from gateway.runtime.app import open_app
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, gateway_config, settled_inbound


def alice_message(message_id: int, text: str) -> InboundMessage:
    return InboundMessage(
        platform="telegram",
        chat_id=str(ALICE),
        user_id=str(ALICE),
        text=text,
        platform_message_id=f"{ALICE}:{message_id}",
        session_key=f"telegram:{ALICE}",
    )


async def record(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    message: InboundMessage,
    reply_ids: list[str] | None = None,
) -> None:
    async with open_app(gateway_config(tmp_path, anthropic, telegram=telegram)) as app:
        await app.repo.record_inbound(
            "telegram",
            message.platform_message_id,
            session_key=message.session_key,
            chat_id=message.chat_id,
            user_id=message.user_id,
            text=message.text,
            payload=message.to_payload(),
        )
        if reply_ids:
            await app.repo.mark_inbound(
                "telegram", message.platform_message_id, "processing", reply_platform_ids=reply_ids
            )


async def test_message_recorded_before_a_crash_is_answered_at_start(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    # Crash after recording, before confirming: Telegram delivers the update again at start.
    update = telegram.push_message(ALICE, "left over")
    message_id = update["message"]["message_id"]
    await record(tmp_path, anthropic, telegram, alice_message(message_id, "left over"))
    async with run_gateway(telegram=telegram) as gateway:
        sent = await telegram.wait_for_sent(ALICE, 1)
        done = await settled_inbound(gateway, "telegram", f"{ALICE}:{message_id}")
        telegram.push_message(ALICE, "after")
        await telegram.wait_for_sent(ALICE, 2)
    assert sent[0]["text"].startswith("Noted: left over")
    assert done.status == "done"
    assert [r.last_user_text for r in anthropic.requests] == ["left over", "after"]


async def test_message_whose_reply_was_sent_before_the_crash_is_not_sent_again(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    update = telegram.push_message(ALICE, "answered")
    message_id = update["message"]["message_id"]
    await record(tmp_path, anthropic, telegram, alice_message(message_id, "answered"), ["55"])
    async with run_gateway(telegram=telegram) as gateway:
        done = await settled_inbound(gateway, "telegram", f"{ALICE}:{message_id}")
        telegram.push_message(ALICE, "after")
        await telegram.wait_for_sent(ALICE, 1)
    assert done.status == "done"
    assert [m["text"][:13] for m in telegram.sent_messages(ALICE)] == ["Noted: after."]
    assert [r.last_user_text for r in anthropic.requests] == ["after"]
