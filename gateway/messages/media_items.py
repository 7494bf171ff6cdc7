"""What a platform said a message carried besides its text, before anything is downloaded.

Adapters describe each piece of content as a :class:`MediaItem` (stored with the inbound
message, so a restart can still fetch it); :mod:`gateway.media.prepare` downloads what is worth
reading and turns it into content parts for the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

PHOTO = "photo"
DOCUMENT = "document"
VOICE = "voice"
AUDIO = "audio"
RENDERED_KINDS = frozenset({"sticker", "location", "venue", "contact"})
"""Kinds whose content is text the adapter renders (a sticker's emoji, a location...)."""


@dataclass(frozen=True, slots=True)
class MediaItem:
    """One attachment as the platform announced it (no bytes yet).

    ``file_id`` is what the adapter downloads it by (Telegram file id, Discord URL); ``size`` is
    the platform's byte count (None when unknown), checked against the limit before any
    download. ``text`` is the rendering of content that needs no download (sticker, location).
    """

    kind: str
    file_id: str | None = None
    size: int | None = None
    mime_type: str | None = None
    width: int | None = None
    height: int | None = None
    file_name: str | None = None
    text: str | None = None

    def to_payload(self) -> dict[str, Any]:
        """A JSON-safe dict (stored with the inbound message)."""
        return {key: value for key, value in asdict(self).items() if value is not None}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> MediaItem:
        """The item stored with :meth:`to_payload` (unknown keys ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in payload.items() if key in known})


class MediaUnavailable(Exception):
    """An attachment's bytes could not be fetched (gone, refused, or the platform failed).

    ``reason`` is short, names the platform and holds no message text (it is logged and shown
    to the user: "Telegram: file is too big"); ``transient`` says whether another attempt may
    succeed (a 5xx, a dropped connection) or not (a file that is gone or too big).
    """

    def __init__(self, reason: str, *, transient: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient
