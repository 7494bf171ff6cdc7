"""Reading a turn's media: what each kind of file becomes, and what a text-only model gets.

The adapter's download is the network edge: here a function serving the test's bytes.
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from agent.attachments import attachment_of
from agent.model_table import lookup_model
from gateway.config.schema import MediaSettings
from gateway.media.images import prepare_image
from gateway.media.prepare import MediaReader
from gateway.messages.inbound import InboundMessage
from gateway.messages.media_items import MediaItem


def _message(*media: MediaItem) -> InboundMessage:
    return InboundMessage("telegram", "42", "42", "", "42:1", "telegram:42", media=media)


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.effect_noise((width, height), 80).convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def _serving(data: bytes):  # type: ignore[no-untyped-def]
    async def fetch(item: MediaItem) -> bytes:
        return data

    return fetch


async def test_a_text_only_model_gets_a_placeholder_and_the_user_is_told(tmp_path: Path) -> None:
    reader = MediaReader(
        MediaSettings(blob_dir=str(tmp_path)), lookup_model("deepseek/deepseek-chat")
    )
    photo = MediaItem("photo", "p1", 100, width=64, height=48)
    prepared = await reader.prepare([_message(photo)], _serving(_png(64, 48)), "telegram")
    [part] = prepared.parts
    assert part["type"] == "text" and part["text"] == "[image: photo, 64x48]"
    ref = attachment_of(part)
    assert ref is not None and reader.blobs.path(ref.sha256).exists()  # still kept
    assert prepared.notices == [
        "(deepseek/deepseek-chat can't look at images; I only told it what you sent.)"
    ]


async def test_a_pdf_counts_its_pages_and_an_unknown_file_gets_a_notice(tmp_path: Path) -> None:
    reader = MediaReader(MediaSettings(blob_dir=str(tmp_path)))
    pdf = b"%PDF-1.7 /Type /Pages /Type /Page x /Type/Page y /Type /Page z"
    prepared = await reader.prepare(
        [_message(MediaItem("document", "d1", len(pdf), "application/pdf", file_name="a.pdf"))],
        _serving(pdf),
        "telegram",
    )
    ref = attachment_of(prepared.parts[0])
    assert ref is not None and ref.pages == 3
    odd = MediaItem("document", "d2", 10, "application/x-msdownload", file_name="setup.exe")
    prepared = await reader.prepare([_message(odd)], _serving(b"MZ"), "telegram")
    assert prepared.parts == []
    assert prepared.notices == ['(I can\'t read "setup.exe": I read images, PDFs and text files.)']


def test_an_image_over_the_byte_limit_is_re_encoded_as_jpeg_under_it() -> None:
    noisy = _png(1000, 800)
    assert len(noisy) > 1_000_000
    prepared = prepare_image(noisy, max_edge=1568, max_bytes=300_000)
    assert prepared.mime_type == "image/jpeg"
    assert len(prepared.data) <= 300_000
    assert (prepared.width, prepared.height) == (1000, 800)


def test_an_image_within_the_limits_keeps_its_exact_bytes() -> None:
    small = _png(200, 100)
    prepared = prepare_image(small, max_edge=1568, max_bytes=3_750_000)
    assert (prepared.data, prepared.mime_type) == (small, "image/png")


def test_an_inbound_message_keeps_its_media_through_the_inbound_table() -> None:
    photo = MediaItem("photo", "file-1", 2048, width=1280, height=960)
    sticker = MediaItem("sticker", text="[sticker: 👍]")
    message = _message(photo, sticker)
    assert InboundMessage.from_payload(message.to_payload()).media == (photo, sticker)


async def test_a_blob_folder_that_cannot_be_written_gives_a_notice_not_a_lost_turn(
    tmp_path: Path,
) -> None:
    not_a_folder = tmp_path / "media"
    not_a_folder.write_text("a file where the blob folder should be")
    reader = MediaReader(MediaSettings(blob_dir=str(not_a_folder)))
    photo = MediaItem("photo", "p1", 100, width=64, height=48)
    prepared = await reader.prepare([_message(photo)], _serving(_png(64, 48)), "telegram")
    assert prepared.parts == []
    assert prepared.notices == [
        "(I could not keep that photo to look at it; please try again later.)"
    ]
