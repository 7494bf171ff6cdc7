"""No message is left pending: a failed download, a corrupt file or a failing turn ends in an
answer or a notice, with the inbound record closed, and nothing is run again after a restart.

The real python-telegram-bot and discord.py clients fetch from emulators told to fail the way
the platforms do: a server error once, a refusal ("file is too big"), a malformed getFile
result, a connection dropped every time; the model's requests are read on the Anthropic
emulator.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest
from PIL import Image

from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.telegram_faults import DOWNLOAD
from tests.gateway.conftest import ALICE, GatewayFactory, message_key, settled_inbound

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

GROUP = -1001234567890
BOT = "@hermes_test_bot"
DM_ID = 700000000000000030
ALICE_ID = 1001
WAIT = 20.0
ALWAYS = 20
"""More failures than any retry policy takes: the platform fails every time."""


def jpeg(width: int = 320, height: int = 200) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "teal").save(buffer, format="JPEG")
    return buffer.getvalue()


def user_blocks(anthropic: AnthropicEmulator) -> list[dict[str, Any]]:
    """The content blocks of the last user message of the latest model request."""
    user = [m for m in anthropic.requests[-1].body["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


async def nothing_pending(gateway: Gateway, platform: str) -> None:
    """Wait until every inbound message of ``platform`` is finished (a state, not a sleep)."""
    async with asyncio.timeout(WAIT):
        while True:
            if not await gateway.app.repo.pending_inbound(platform):
                return
            await asyncio.sleep(0.02)


def texts(sent: list[dict[str, Any]], key: str = "text") -> str:
    """Everything the bot sent, one message a line."""
    return "\n".join(message[key] for message in sent)


async def test_a_photo_whose_getfile_fails_once_is_retried_and_answered_with_the_photo(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.inject_fault("getFile", status=500)
        update = telegram.push_photo(ALICE, [(jpeg(), 320, 200)], caption="what is this?")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
        blocks = user_blocks(anthropic)
    assert [block["type"] for block in blocks] == ["image", "text"]
    assert sent[0]["text"].startswith("Noted: what is this?")
    assert "couldn't download" not in sent[0]["text"]
    assert len(telegram.calls_of("getFile")) == 2
    assert record.status == "done"


async def test_a_download_failing_once_on_the_file_server_is_retried(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.inject_fault(DOWNLOAD, status=502)
        update = telegram.push_photo(ALICE, [(jpeg(), 320, 200)])
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
        blocks = user_blocks(anthropic)
    assert blocks[0]["type"] == "image"
    assert telegram.download_attempts == 2
    assert record.status == "done"


async def test_a_file_too_big_gets_a_notice_naming_why_and_the_caption_is_still_answered(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.inject_fault("getFile", status=400, description="Bad Request: file is too big")
        update = telegram.push_photo(ALICE, [(jpeg(), 320, 200)], caption="look at this")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
    text = texts(sent)
    assert "couldn't download your photo (Telegram: file is too big)" in text
    assert "as a smaller file" in text
    assert "Noted: look at this" in text  # the caption reached the model
    assert len(telegram.calls_of("getFile")) == 1  # a refusal is not retried
    assert record.status == "done"


async def test_a_malformed_getfile_result_gets_a_notice_not_a_pending_message(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.serve_malformed("getFile")
        update = telegram.push_photo(ALICE, [(jpeg(), 320, 200)])
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
        await nothing_pending(gateway, "telegram")
    assert "couldn't download your photo" in sent[0]["text"]
    assert anthropic.requests == []  # nothing left to read: the notice is the answer
    assert record.status == "done"


async def test_a_connection_dropped_every_time_ends_in_a_notice_after_a_few_attempts(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.drop_connections("getFile", count=ALWAYS)
        update = telegram.push_photo(ALICE, [(jpeg(), 320, 200)], caption="and this?")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
    assert "couldn't download your photo (Telegram:" in sent[0]["text"]
    assert sent[1]["text"].startswith("Noted: and this?")
    assert 1 < len(telegram.calls_of("getFile")) < ALWAYS
    assert record.status == "done"


async def test_a_corrupt_image_gets_a_notice_and_never_reaches_the_model(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    truncated = jpeg(640, 480)[:400]  # a JPEG header that reads fine, the pixels cut off
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_photo(ALICE, [(truncated, 640, 480)], caption="my cat")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
        assert all(block["type"] == "text" for block in user_blocks(anthropic))
        telegram.push_message(ALICE, "and now just text")
        replies = await telegram.wait_for_sent(ALICE, 3, timeout=WAIT)
    assert "can't read that photo" in sent[0]["text"]
    assert sent[1]["text"].startswith("Noted: my cat")
    assert replies[-1]["text"].startswith("Noted: and now just text")  # the session is sound
    assert record.status == "done"


async def test_one_unreadable_attachment_of_an_album_leaves_the_others_answered(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.inject_fault("getFile", status=400, description="Bad Request: file is too big")
        telegram.push_photo(ALICE, [(jpeg(), 320, 200)], media_group_id="album")
        second = telegram.push_photo(ALICE, [(jpeg(200, 100), 200, 100)], media_group_id="album")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        await settled_inbound(gateway, "telegram", message_key(second))
        blocks = user_blocks(anthropic)
    assert [block["type"] for block in blocks] == ["image"]
    assert "file is too big" in sent[0]["text"]
    assert sent[1]["text"].startswith("Noted")


async def test_an_exception_in_a_turn_ends_failed_with_one_notice_and_is_not_rerun(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        anthropic.inject_fault("malformed")  # the SDK raises an error nobody planned for
        update = telegram.push_message(ALICE, "my secret plan")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
    assert record.status == "failed"
    assert record.failure is not None and "JSONDecodeError" in record.failure
    assert sent[0]["text"] == "Sorry, I could not answer that (JSONDecodeError). Please try again."
    assert "my secret plan" not in caplog.text
    calls = len(anthropic.requests)
    async with run_gateway(telegram=telegram) as gateway:  # a restart runs nothing again
        telegram.push_message(ALICE, "once more")
        replies = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        again = await gateway.app.repo.get_inbound("telegram", message_key(update))
    assert len(anthropic.requests) == calls + 1  # only the new message reached the model
    assert replies[-1]["text"].startswith("Noted: ")
    assert "once more" in replies[-1]["text"]
    assert again is not None and again.status == "failed"
    assert len(telegram.sent_messages(ALICE)) == 2


async def test_a_bare_mention_in_a_group_is_answered_with_what_the_bot_can_do(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(GROUP, BOT, user_id=ALICE, chat_type="supergroup")
        sent = await telegram.wait_for_sent(GROUP, 1, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
    text = sent[0]["text"]
    assert "photos, PDFs" in text and "/help" in text
    assert "can't read" not in text and "only read text" not in text
    assert anthropic.requests == []
    assert record.status == "done"


async def test_a_discord_attachment_failing_once_on_the_cdn_is_retried_and_read(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        discord_emulator.cdn.fail_downloads(500)
        image = discord_emulator.cdn.upload("a.jpg", "image/jpeg", jpeg(), width=320, height=200)
        discord_emulator.push_message(DM_ID, "what is it?", author_id=ALICE_ID, attachments=[image])
        sent = await discord_emulator.wait_for_sent(DM_ID, 1, timeout=WAIT)
        await nothing_pending(gateway, "discord")
        blocks = user_blocks(anthropic)
    assert [block["type"] for block in blocks] == ["image", "text"]
    assert discord_emulator.cdn.attempts == 2
    assert "couldn't download" not in sent[0]["content"]


@pytest.mark.parametrize(
    ("fail", "reason"),
    [
        (lambda cdn: cdn.fail_downloads(404), "(Discord: the file is gone)"),
        (lambda cdn: cdn.drop_downloads(ALWAYS), "(Discord: "),
    ],
    ids=["gone", "dropped-every-time"],
)
async def test_a_discord_attachment_that_cannot_be_had_gets_a_notice_and_the_text_an_answer(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    fail: Any,
    reason: str,
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        fail(discord_emulator.cdn)
        upload = discord_emulator.cdn.upload("notes.pdf", "application/pdf", b"%PDF-1.4\n%%EOF")
        discord_emulator.push_message(DM_ID, "summarise", author_id=ALICE_ID, attachments=[upload])
        sent = await discord_emulator.wait_for_sent(DM_ID, 2, timeout=WAIT)
        await nothing_pending(gateway, "discord")
    assert f'couldn\'t download "notes.pdf" {reason}' in sent[0]["content"]
    assert sent[1]["content"].startswith("Noted: summarise")


async def test_a_discord_turn_that_raises_ends_failed_with_one_notice(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        anthropic.inject_fault("malformed")
        pushed = discord_emulator.push_message(DM_ID, "hello there", author_id=ALICE_ID)
        sent = await discord_emulator.wait_for_sent(DM_ID, 1, timeout=WAIT)
        await nothing_pending(gateway, "discord")
        record = await gateway.app.repo.get_inbound("discord", pushed["id"])
    assert (
        sent[0]["content"] == "Sorry, I could not answer that (JSONDecodeError). Please try again."
    )
    assert record is not None and record.status == "failed"
    assert record.failure is not None and "JSONDecodeError" in record.failure
