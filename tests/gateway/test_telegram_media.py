"""Photos, stickers, voice notes, files and locations are never met with silence.

Until the bot can read them, a message with only such content gets a short polite reply naming
what is not supported (without calling the model); a caption is answered as text, with a note
that the attachment itself was not read.
"""

from __future__ import annotations

import pytest

from gateway.attachments import KIND_NAMES
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, settled_inbound

GROUP = -1001234567890
WAIT = 10.0


@pytest.mark.parametrize(
    "kind", ["photo", "sticker", "voice", "document", "location", "animation", "video_note"]
)
async def test_a_message_with_only_an_attachment_gets_a_polite_reply_without_the_model(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    kind: str,
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_media(ALICE, kind)
        sent = await telegram.wait_for_sent(ALICE, 1)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
    assert len(sent) == 1
    assert f"can't read {KIND_NAMES[kind]} yet" in sent[0]["text"]
    assert record.status == "done"
    assert anthropic.requests == []


async def test_a_caption_is_answered_and_the_unread_photo_is_mentioned(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_media(ALICE, "photo", caption="what breed is this dog?")
        sent = await telegram.wait_for_sent(ALICE, 2)
    texts = [message["text"] for message in sent]
    assert "photos are not supported yet" in texts[0]
    assert texts[1].startswith("Noted: what breed is this dog?")
    assert [r.last_user_text for r in anthropic.requests] == ["what breed is this dog?"]


async def test_a_group_photo_is_answered_only_when_its_caption_mentions_the_bot(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_media(GROUP, "photo", user_id=ALICE, chat_type="supergroup")
        telegram.push_media(
            GROUP, "sticker", user_id=ALICE, chat_type="supergroup", caption="@hermes_test_bot"
        )
        sent = await telegram.wait_for_sent(GROUP, 1)
    assert len(sent) == 1
    assert "can't read stickers yet" in sent[0]["text"]
    assert anthropic.requests == []
