"""From the media a turn's messages announced to content parts the model reads.

Each :class:`MediaItem` is checked against the size limit before anything is downloaded, then
fetched through the adapter, kept once in the blob folder and turned into a part: photos and
image files an image, PDFs a document, text files their text with the file name, voice notes
their transcript. What cannot be read gets a short notice for the user instead, never silence.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import PurePath
from typing import Any

from tenacity import stop_after_attempt

from agent.attachments import (
    PDF_MIME,
    AttachmentRef,
    attachment_of,
    attachment_part,
    placeholder_part,
)
from agent.model_table import ModelInfo
from agent.retries import doubling, retried, retry_if_transient
from gateway.media import notices
from gateway.media.blobs import BlobStore
from gateway.media.images import UnreadableImage, prepare_image
from gateway.media.transcribe import Transcriber, TranscriptionFailed
from gateway.messages.attachments import READABLE_WITHOUT_VOICE, unsupported_reply
from gateway.messages.failures import failure_summary
from gateway.messages.inbound import InboundMessage
from gateway.messages.media_items import AUDIO, DOCUMENT, PHOTO, VOICE, MediaItem, MediaUnavailable
from gateway.settings.media import MediaSettings

log = logging.getLogger(__name__)

FetchFile = Callable[[MediaItem], Awaitable[bytes]]
Part = dict[str, Any]
TEXT_MIME_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/x-yaml",
        "application/yaml",
        "application/javascript",
        "application/x-sh",
        "application/sql",
        "application/toml",
    }
)
"""Non-``text/*`` MIME types whose files are plain text."""
TEXT_EXTENSIONS = frozenset(
    {
        ".txt",
        ".md",
        ".csv",
        ".tsv",
        ".json",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".xml",
        ".log",
        ".py",
        ".js",
        ".ts",
        ".html",
        ".css",
        ".sh",
        ".sql",
        ".c",
        ".h",
        ".cpp",
        ".java",
        ".go",
        ".rs",
        ".rb",
        ".kt",
        ".swift",
        ".cfg",
        ".conf",
    }
)
"""File name endings of text files sent with a generic MIME type (application/octet-stream)."""
IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tiff"})
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
"""A page object in a PDF (``/Type /Page``, not ``/Pages``): a cheap page count."""
MEGABYTE = 1024 * 1024
FETCH_ATTEMPTS = 3
"""Downloads tried per attachment when the platform fails transiently (5xx, a dropped
connection): a blip is ridden out, a platform that is down costs the turn a few seconds."""
FETCH_FIRST_BACKOFF = 0.5
FETCH_MAX_BACKOFF = 4.0
"""Seconds between download attempts: 0.5, then 1, doubling up to this."""


@dataclass
class PreparedMedia:
    """A turn's media as content parts for the model, and what the user should be told."""

    parts: list[Part] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def content(self, text: str) -> str | list[Part]:
        """The user message's content: the media parts, then the text (just the text if no
        media was read)."""
        if not self.parts:
            return text
        return [*self.parts, {"type": "text", "text": text}] if text else list(self.parts)

    def replies_instead(self, unread_kinds: Sequence[str], readable: str) -> list[str]:
        """What to answer when nothing in the turn could be read: the notices, and what was
        not supported (there is always at least one reply); ``readable`` says what the bot
        does read."""
        replies = list(self.notices)
        if unread_kinds or not replies:
            replies.append(unsupported_reply(unread_kinds, readable))
        return replies


class MediaReader:
    """Reads the media of a turn's messages (see the module docstring)."""

    def __init__(
        self,
        settings: MediaSettings,
        model: ModelInfo | None = None,
        blobs: BlobStore | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._sleep = sleep
        self.settings = settings
        self.model = model
        """The main model: one that reads no images (or PDFs) gets placeholders instead."""
        self.blobs = blobs or BlobStore(settings.blob_path())
        transcription = settings.transcription
        self._transcriber = Transcriber(transcription) if transcription.base_url else None

    async def prepare(
        self,
        batch: Sequence[InboundMessage],
        fetch: FetchFile,
        platform: str,
        model: ModelInfo | None = None,
    ) -> PreparedMedia:
        """Every media item of ``batch`` read, in order, under ``platform``'s download limit,
        for ``model`` (the session's; default: the main model)."""
        prepared = PreparedMedia()
        limit_mb = self.settings.download_limit_mb(platform)
        for message in batch:
            for item in message.media:
                try:
                    await self._read(item, message.sent_at, fetch, limit_mb, prepared)
                except Exception as exc:  # never let one attachment sink the message
                    log.error("media %s not read: %s", item.kind, failure_summary(exc))
                    prepared.notices.append(notices.not_read(item))
        model = model or self.model
        if model is not None:
            self._fit_model(prepared, model)
        return prepared

    @staticmethod
    def _fit_model(prepared: PreparedMedia, model: ModelInfo) -> None:
        """Attachments the model cannot read become placeholders (still stored), and the user
        is told once."""
        unread: list[AttachmentRef] = []
        for index, part in enumerate(prepared.parts):
            ref = attachment_of(part)
            if ref is not None and not (model.vision if ref.is_image else model.reads_pdf):
                prepared.parts[index] = placeholder_part(ref)
                unread.append(ref)
        if unread:
            prepared.notices.append(notices.model_cannot_read(model.id, unread))

    def readable_text(self) -> str:
        """What the bot reads, for the user: "text, photos, PDFs and text files" (voice
        messages too when transcription is configured)."""
        if self._transcriber is None:
            return READABLE_WITHOUT_VOICE
        return "text, photos, PDFs, text files and voice messages"

    async def aclose(self) -> None:
        """Release the transcription client."""
        if self._transcriber is not None:
            await self._transcriber.aclose()

    async def _read(
        self,
        item: MediaItem,
        sent_at: float | None,
        fetch: FetchFile,
        limit_mb: float,
        out: PreparedMedia,
    ) -> None:
        if item.text is not None:
            out.parts.append({"type": "text", "text": item.text})
            return
        if item.kind in (VOICE, AUDIO) and self._transcriber is None:
            out.notices.append(notices.NO_TRANSCRIPTION)
            return
        if item.size is not None and item.size > limit_mb * MEGABYTE:
            out.notices.append(notices.too_large(item, item.size / MEGABYTE, limit_mb))
            return
        try:
            data = await self._fetch(item, fetch)
        except MediaUnavailable as exc:
            log.warning("media %s not fetched: %s", item.kind, exc.reason)
            out.notices.append(notices.not_fetched(item, exc.reason))
            return
        if len(data) > limit_mb * MEGABYTE:  # the platform did not say its size
            out.notices.append(notices.too_large(item, len(data) / MEGABYTE, limit_mb))
            return
        try:
            await self._convert(item, data, sent_at, out)
        except OSError as exc:  # the blob folder: full disk, no permission
            log.error("media %s not kept: %s", item.kind, type(exc).__name__)
            out.notices.append(notices.not_kept(item))

    async def _fetch(self, item: MediaItem, fetch: FetchFile) -> bytes:
        """The item's bytes, retrying transient failures (see :data:`FETCH_ATTEMPTS`).

        Raises :class:`MediaUnavailable`, also for an error the adapter did not foresee.
        """
        try:
            return await retried(
                partial(fetch, item),
                stop=stop_after_attempt(FETCH_ATTEMPTS),
                wait=doubling(FETCH_FIRST_BACKOFF, FETCH_MAX_BACKOFF),
                retry=retry_if_transient,  # MediaUnavailable(transient=True): a 5xx, a timeout
                sleep=self._sleep,
            )
        except MediaUnavailable:
            raise
        except Exception as exc:
            log.error("media %s: fetch failed: %s", item.kind, failure_summary(exc))
            raise MediaUnavailable(f"{type(exc).__name__}") from exc

    async def _convert(
        self, item: MediaItem, data: bytes, sent_at: float | None, out: PreparedMedia
    ) -> None:
        suffix = PurePath(item.file_name or "").suffix.lower()
        mime = (item.mime_type or "").lower()
        if item.kind in (VOICE, AUDIO):
            await self._transcribe(item, data, out)
        elif item.kind == PHOTO or mime.startswith("image/") or suffix in IMAGE_EXTENSIONS:
            self._add_image(item, data, sent_at, out)
        elif mime == PDF_MIME or suffix == ".pdf":
            self._add_pdf(item, data, sent_at, out)
        elif mime.startswith("text/") or mime in TEXT_MIME_TYPES or suffix in TEXT_EXTENSIONS:
            self._add_text_file(item, data, out)
        else:
            out.notices.append(notices.unreadable_file(item))

    def _add_image(
        self, item: MediaItem, data: bytes, sent_at: float | None, out: PreparedMedia
    ) -> None:
        settings = self.settings
        try:
            image = prepare_image(
                data, max_edge=settings.max_image_edge, max_bytes=settings.max_image_bytes
            )
        except UnreadableImage as exc:
            log.warning("image not readable: %s", exc)
            out.notices.append(notices.unreadable_file(item))
            return
        ref = AttachmentRef(
            kind=PHOTO if item.kind == PHOTO else "image",
            sha256=self.blobs.put(image.data),
            mime_type=image.mime_type,
            size=len(image.data),
            width=image.width,
            height=image.height,
            file_name=item.file_name,
            platform_file_id=item.file_id,
            shared_at=sent_at,
        )
        out.parts.append(attachment_part(ref, image.data))

    def _add_pdf(
        self, item: MediaItem, data: bytes, sent_at: float | None, out: PreparedMedia
    ) -> None:
        ref = AttachmentRef(
            kind=DOCUMENT,
            sha256=self.blobs.put(data),
            mime_type=PDF_MIME,
            size=len(data),
            pages=len(_PDF_PAGE.findall(data)) or None,
            file_name=item.file_name,
            platform_file_id=item.file_id,
            shared_at=sent_at,
        )
        out.parts.append(attachment_part(ref, data))

    def _add_text_file(self, item: MediaItem, data: bytes, out: PreparedMedia) -> None:
        if len(data) > self.settings.max_text_file_kb * 1024:
            out.notices.append(notices.text_file_too_long(item, self.settings.max_text_file_kb))
            return
        text = data.decode("utf-8", errors="replace").replace("\x00", "")
        name = item.file_name or "file"
        out.parts.append({"type": "text", "text": f"[file {name}]\n{text}"})

    async def _transcribe(self, item: MediaItem, data: bytes, out: PreparedMedia) -> None:
        assert self._transcriber is not None  # checked before the download
        name = item.file_name or ("voice.ogg" if item.kind == VOICE else "audio")
        try:
            text = await self._transcriber.transcribe(data, name)
        except TranscriptionFailed as exc:
            log.warning("transcription failed: %s", exc)
            out.notices.append(notices.TRANSCRIPTION_FAILED)
            return
        out.parts.append({"type": "text", "text": f"[{item.kind} message, transcribed] {text}"})
