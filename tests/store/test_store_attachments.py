"""Attachments are stored once in the blob folder and referenced from their message.

The database keeps the reference (SHA-256, MIME type, size, dimensions, platform file id), never
the bytes; the context read back from the store gets the bytes again from the blob folder; the
export names every attachment of a message.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from agent.attachments import AttachmentRef, attachment_part, message_attachments
from gateway.media.blobs import BlobStore, hydrate_context
from gateway.store.repository import Repository
from gateway.store.tables import AttachmentRow

PHOTO = b"\x89PNG fake photo bytes" * 100


def _photo_message(blobs: BlobStore) -> dict[str, object]:
    digest = blobs.put(PHOTO)
    ref = AttachmentRef(
        kind="photo",
        sha256=digest,
        mime_type="image/png",
        size=len(PHOTO),
        width=1280,
        height=960,
        platform_file_id="photo-file-id",
        shared_at=1_796_289_240.0,
    )
    caption = {"type": "text", "text": "what is this?"}
    return {"role": "user", "content": [attachment_part(ref, PHOTO), caption]}


def test_a_blob_is_kept_once_under_its_sha256(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "media")
    first = blobs.put(PHOTO)
    second = blobs.put(PHOTO)
    assert first == second
    assert blobs.get(first) == PHOTO
    assert [p.name for p in (tmp_path / "media").rglob("*") if p.is_file()] == [first]


async def test_a_stored_photo_is_a_reference_and_comes_back_with_its_bytes(
    repo: Repository, tmp_path: Path
) -> None:
    blobs = BlobStore(tmp_path / "media")
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    message = _photo_message(blobs)
    [message_id] = await repo.append_messages(session.id, [message], [2000])

    [stored] = await repo.all_messages(session.id)
    assert "PNG" not in str(stored.content)  # no bytes (nor their base64) in the database
    assert stored.content[1] == {"type": "text", "text": "what is this?"}
    async with repo.store.sessionmaker() as db:
        rows = (await db.scalars(select(AttachmentRow))).all()
    assert [(r.message_id, r.kind, r.mime_type, r.size_bytes) for r in rows] == [
        (message_id, "photo", "image/png", len(PHOTO))
    ]
    assert (rows[0].width, rows[0].height, rows[0].platform_file_id) == (1280, 960, "photo-file-id")

    context = await repo.load_context(session.id)
    hydrate_context(context, blobs)
    assert context[0]["content"] == message["content"]


async def test_a_missing_blob_leaves_a_placeholder_naming_the_attachment(
    repo: Repository, tmp_path: Path
) -> None:
    blobs = BlobStore(tmp_path / "media")
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    await repo.append_messages(session.id, [_photo_message(blobs)], [2000])
    context = await repo.load_context(session.id)
    hydrate_context(context, BlobStore(tmp_path / "elsewhere"))
    placeholder = context[0]["content"][0]
    assert placeholder["type"] == "text"
    assert placeholder["text"].startswith("[image: photo, 1280x960, shared 2026-")
    assert message_attachments(context[0]["content"])[0].sha256 == blobs.put(PHOTO)


async def test_the_export_names_each_attachment(repo: Repository, tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "media")
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    await repo.append_messages(session.id, [_photo_message(blobs)], [2000])
    lines = [line async for line in repo.export_session(session.id)]
    [attached] = lines[0]["attachments"]
    assert attached["sha256"] == blobs.put(PHOTO)
    assert attached["mime_type"] == "image/png"
    assert (attached["width"], attached["height"]) == (1280, 960)
