"""Photos, files, stickers, locations and voice notes reach the model, or get a short notice.

The real python-telegram-bot client fetches files from the Telegram emulator (getFile, then
the download); the model's requests are inspected on the Anthropic emulator. After each case
the next text message is answered normally.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from typing import Any

import pytest
from PIL import Image

from agent.attachments import message_attachments
from gateway.config.schema import hermes_home
from gateway.media.blobs import BlobStore
from gateway.messages.attachments import KIND_NAMES
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.transcription_api import TranscriptionEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, settled_inbound

GROUP = -1001234567890
MEGABYTE = 1024 * 1024


def jpeg(width: int, height: int, color: str = "teal") -> bytes:
    """A real JPEG of the given size."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="JPEG")
    return buffer.getvalue()


def last_user_blocks(anthropic: AnthropicEmulator) -> list[dict[str, Any]]:
    """The content blocks of the last user message of the latest model request (without
    their cache markers)."""
    user = [m for m in anthropic.requests[-1].body["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{k: v for k, v in block.items() if k != "cache_control"} for block in content]


def decoded(block: dict[str, Any]) -> bytes:
    return base64.b64decode(block["source"]["data"])


async def answered_after(
    telegram: TelegramEmulator, anthropic: AnthropicEmulator, sent: int
) -> None:
    """A text message after the media one is answered by the model as usual."""
    calls = len(anthropic.requests)
    telegram.push_message(ALICE, "and now just text")
    replies = await telegram.wait_for_sent(ALICE, sent + 1)
    assert replies[-1]["text"].startswith("Noted: and now just text")
    assert len(anthropic.requests) == calls + 1


async def test_a_photo_with_a_caption_reaches_the_model_as_image_and_caption(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    small, large = jpeg(90, 60), jpeg(800, 600)
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_photo(ALICE, [(small, 90, 60), (large, 800, 600)], caption="what is this?")
        sent = await telegram.wait_for_sent(ALICE, 1)
        image, caption = last_user_blocks(anthropic)
        assert image["type"] == "image"
        assert image["source"]["media_type"] == "image/jpeg"
        assert decoded(image) == large  # the largest size, its exact bytes
        assert caption == {"type": "text", "text": "what is this?"}
        assert sent[0]["text"].startswith("Noted: what is this?")
        await answered_after(telegram, anthropic, 1)
        [session] = await gateway.app.repo.list_sessions()
        stored = (await gateway.app.repo.all_messages(session.id))[1]
    assert len(telegram.calls_of("getFile")) == 1
    [ref] = message_attachments(stored.content)
    assert (ref.kind, ref.mime_type, ref.width, ref.height) == ("photo", "image/jpeg", 800, 600)
    assert ref.sha256 == hashlib.sha256(large).hexdigest()
    assert BlobStore(hermes_home() / "media").get(ref.sha256) == large
    assert "base64" not in str(stored.content)  # the database holds the reference only


async def test_a_photo_without_caption_is_answered_and_a_large_one_resized(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram, media_settings={"max_photo_pixels": 5_000_000}):
        telegram.push_photo(ALICE, [(jpeg(320, 240), 320, 240), (jpeg(2560, 1920), 2560, 1920)])
        await telegram.wait_for_sent(ALICE, 1)
        [image] = last_user_blocks(anthropic)
        with Image.open(io.BytesIO(decoded(image))) as seen:
            assert seen.size == (1568, 1176)
        await answered_after(telegram, anthropic, 1)


async def test_the_photo_size_within_the_pixel_budget_is_downloaded(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    medium = jpeg(1280, 960)
    async with run_gateway(telegram=telegram, media_settings={"max_photo_pixels": 2_000_000}):
        telegram.push_photo(ALICE, [(medium, 1280, 960), (jpeg(2560, 1920), 2560, 1920)])
        await telegram.wait_for_sent(ALICE, 1)
    [image] = last_user_blocks(anthropic)
    assert decoded(image) == medium
    assert len(telegram.files.downloads) == 1


async def test_a_pdf_arrives_as_a_document_block(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages >> endobj 2 0 obj << /Type /Page >> endobj\n%%EOF"
    async with run_gateway(telegram=telegram):
        telegram.push_document(ALICE, pdf, "report.pdf", "application/pdf", caption="summarise")
        await telegram.wait_for_sent(ALICE, 1)
        document, caption = last_user_blocks(anthropic)
        assert document["type"] == "document"
        assert document["source"]["media_type"] == "application/pdf"
        assert decoded(document) == pdf
        assert caption["text"] == "summarise"
        await answered_after(telegram, anthropic, 1)


async def test_a_text_file_reaches_the_model_as_its_text_with_the_file_name(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_document(ALICE, b"name,qty\napples,3\n", "stock.csv", "text/csv")
        await telegram.wait_for_sent(ALICE, 1)
        [text] = last_user_blocks(anthropic)
        assert text["text"] == "[file stock.csv]\nname,qty\napples,3\n"
        await answered_after(telegram, anthropic, 1)


async def test_a_30_mb_document_gets_a_notice_without_a_download_attempt(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_document(
            ALICE, b"%PDF-1.4 big", "huge.pdf", "application/pdf", announced_size=30 * MEGABYTE
        )
        sent = await telegram.wait_for_sent(ALICE, 1)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
        assert '"huge.pdf" is too large' in sent[0]["text"]
        assert "up to 20 MB" in sent[0]["text"]
        assert record.status == "done"
        assert anthropic.requests == []
        await answered_after(telegram, anthropic, 1)
    assert telegram.calls_of("getFile") == []
    assert telegram.files.downloads == []


@pytest.mark.parametrize(
    ("kind", "seen"),
    [
        ("sticker", "[sticker: \N{THUMBS UP SIGN}]"),
        ("location", "[location: latitude 48.8584, longitude 2.2945]"),
        ("contact", "[contact: Carol, phone +15550100]"),
    ],
)
async def test_stickers_locations_and_contacts_reach_the_model_as_text(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    kind: str,
    seen: str,
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_media(ALICE, kind)
        sent = await telegram.wait_for_sent(ALICE, 1)
        assert last_user_blocks(anthropic) == [{"type": "text", "text": seen}]
        assert sent[0]["text"].startswith("Noted:")
        await answered_after(telegram, anthropic, 1)


async def test_a_voice_note_without_transcription_gets_a_notice_not_silence(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_voice(ALICE, b"OggS fake opus")
        sent = await telegram.wait_for_sent(ALICE, 1)
        assert "transcription is not configured" in sent[0]["text"]
        assert anthropic.requests == []
        await answered_after(telegram, anthropic, 1)
    assert telegram.files.downloads == []


async def test_an_album_arriving_in_pieces_is_one_turn(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    first, second = jpeg(640, 480, "red"), jpeg(480, 640, "blue")
    async with run_gateway(telegram=telegram):
        telegram.push_photo(ALICE, [(first, 640, 480)], caption="our trip", media_group_id="g1")
        telegram.push_photo(ALICE, [(second, 480, 640)], media_group_id="g1")
        sent = await telegram.wait_for_sent(ALICE, 1)
        blocks = last_user_blocks(anthropic)
        assert [b["type"] for b in blocks] == ["image", "image", "text"]
        assert [decoded(b) for b in blocks[:2]] == [first, second]
        assert len(anthropic.requests) == 1
        assert len(sent) == 1
        await answered_after(telegram, anthropic, 1)


@pytest.mark.parametrize("kind", ["animation", "video_note", "video"])
async def test_content_the_bot_cannot_read_gets_a_polite_reply_without_the_model(
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
    assert len(anthropic.requests) == 1  # the photo without a mention was not for the bot
    assert last_user_blocks(anthropic)[0]["text"] == "[sticker: \N{THUMBS UP SIGN}]"


async def test_a_voice_note_is_transcribed_by_the_configured_endpoint_and_answered(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    whisper = TranscriptionEmulator()
    await whisper.start()
    try:
        whisper.say(b"OggS spoken words", "remind me to buy milk")
        transcription = {"base_url": whisper.base_url, "model": "whisper-local"}
        async with run_gateway(telegram=telegram, media_settings={"transcription": transcription}):
            telegram.push_voice(ALICE, b"OggS spoken words")
            sent = await telegram.wait_for_sent(ALICE, 1)
            [text] = last_user_blocks(anthropic)
            assert text["text"] == "[voice message, transcribed] remind me to buy milk"
            assert sent[0]["text"].startswith("Noted: [voice message, transcribed]")
            await answered_after(telegram, anthropic, 1)
    finally:
        await whisper.stop()
    [request] = whisper.requests
    assert (request.model, request.audio) == ("whisper-local", b"OggS spoken words")


def _images_in(request_body: dict[str, Any]) -> int:
    return sum(
        1
        for message in request_body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "image"
    )


async def test_an_old_photo_is_pruned_from_a_16k_window_but_stays_referenced(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    anthropic.context_length = 16_000
    photo = jpeg(1280, 960)
    words = "the quick brown fox jumps over the lazy dog " * 12
    async with run_gateway(telegram=telegram, model_settings={"context_length": 16_000}) as gateway:
        telegram.push_photo(ALICE, [(photo, 1280, 960)], caption="remember this photo")
        await telegram.wait_for_sent(ALICE, 1)
        for turn in range(40):
            telegram.push_message(ALICE, f"turn {turn}: {words}")
            await telegram.wait_for_sent(ALICE, turn + 2)
        [session] = await gateway.app.repo.list_sessions()
        stored = await gateway.app.repo.all_messages(session.id)
    requests = anthropic.requests
    assert all(r.error_type is None for r in requests)
    assert all((r.prompt_tokens or 0) <= 16_000 for r in requests)
    images = [_images_in(r.body) for r in requests]
    compacted = images.index(0)  # the first request without the photo (the summary's)
    assert images[:compacted] == [1] * compacted and compacted > 10
    latest = json.dumps(requests[-1].body)  # the photo's message, in the kept head
    assert "[image: photo, 1280x960, shared " in latest
    assert "remember this photo" in latest
    assert images[compacted:] == [0] * (len(requests) - compacted)
    assert len(requests) > compacted + 5  # the turns after it no longer carry the photo
    [ref] = message_attachments(stored[1].content)  # the original message keeps its photo
    assert ref.sha256 == hashlib.sha256(photo).hexdigest()
