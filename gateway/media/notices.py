"""What the bot tells a person about media it did not read, short and specific."""

from __future__ import annotations

from collections.abc import Sequence

from agent.attachments import AttachmentRef
from gateway.messages.media_items import MediaItem

NO_TRANSCRIPTION = (
    "(I can't listen to voice or audio messages here: transcription is not configured. "
    "Please send your message as text.)"
)
TRANSCRIPTION_FAILED = "(I could not transcribe your voice message. Please send it as text.)"


def _name(item: MediaItem) -> str:
    return f'"{item.file_name}"' if item.file_name else f"that {item.kind}"


def too_large(item: MediaItem, size_mb: float, limit_mb: float) -> str:
    """The file is over the platform's download limit: it was not downloaded."""
    return (
        f"({_name(item)} is too large for me to open: {size_mb:.1f} MB, "
        f"and I can only download files up to {limit_mb:g} MB.)"
    )


KIND_WORDS = {"photo": "photo", "image": "image", "document": "file", "voice": "voice message"}
"""How a notice names an attachment that has no file name ("your photo")."""
SIZE_WORDS = ("too big", "too large")
"""Reasons after which a smaller file is worth suggesting."""


def not_fetched(item: MediaItem, reason: str) -> str:
    """The platform did not hand over the file (``reason``: short, the platform's words)."""
    name = f'"{item.file_name}"' if item.file_name else f"your {KIND_WORDS.get(item.kind, 'file')}"
    smaller = " or as a smaller file" if any(word in reason for word in SIZE_WORDS) else ""
    return f"(Sorry, I couldn't download {name} ({reason}). Please send it again{smaller}.)"


def not_read(item: MediaItem) -> str:
    """Reading the file failed in a way nobody expected (it was logged for the operator)."""
    return f"(Sorry, something went wrong while I read {_name(item)}; I answered without it.)"


def not_kept(item: MediaItem) -> str:
    """The file came but could not be stored (the blob folder failed)."""
    return f"(I could not keep {_name(item)} to look at it; please try again later.)"


def unreadable_file(item: MediaItem) -> str:
    """A file of a kind the bot does not read."""
    return f"(I can't read {_name(item)}: I read images, PDFs and text files.)"


def text_file_too_long(item: MediaItem, limit_kb: int) -> str:
    """A text file over the configured size."""
    return f"({_name(item)} is too long for me to read: I read text files up to {limit_kb} KB.)"


def model_cannot_read(model: str, refs: Sequence[AttachmentRef]) -> str:
    """The configured model reads no images (or PDFs): it only learnt that something came."""
    kinds = "images" if all(ref.is_image for ref in refs) else "these files"
    return f"({model} can't look at {kinds}; I only told it what you sent.)"
