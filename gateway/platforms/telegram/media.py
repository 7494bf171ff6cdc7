"""What a Telegram message carried besides its text, as :class:`MediaItem` values.

Photos come in several sizes: the largest within the pixel budget is kept (the model never
needs more, and the download stays small). Stickers, locations, venues and contacts are rendered
as text here; files are described for a later download. Kinds the bot cannot read are named
so the runner can say so.
"""

from __future__ import annotations

from collections.abc import Sequence

from telegram import Message, PhotoSize

from gateway.messages.media_items import AUDIO, DOCUMENT, PHOTO, VOICE, MediaItem

UNREAD_FIELDS = (
    "animation",
    "dice",
    "game",
    "paid_media",
    "poll",
    "story",
    "video_note",
    "video",
)
"""Message fields holding content the bot does not read (a short notice names them)."""


def choose_photo_size(sizes: Sequence[PhotoSize], pixel_budget: int) -> PhotoSize:
    """The largest size within ``pixel_budget`` pixels (the smallest when none is)."""
    by_area = sorted(sizes, key=lambda size: size.width * size.height)
    within = [size for size in by_area if size.width * size.height <= pixel_budget]
    return within[-1] if within else by_area[0]


def unread_kinds(message: Message) -> tuple[str, ...]:
    """The kinds of content the message carries that the bot does not read."""
    if message.animation is not None:
        return ("animation",)  # a GIF message also carries a document: do not read it twice
    return tuple(name for name in UNREAD_FIELDS if getattr(message, name, None))


def media_items(message: Message, pixel_budget: int) -> tuple[MediaItem, ...]:
    """Everything the bot reads in the message besides its text, in a stable order."""
    items: list[MediaItem] = []
    if message.photo:
        size = choose_photo_size(message.photo, pixel_budget)
        items.append(
            MediaItem(PHOTO, size.file_id, size.file_size, None, size.width, size.height, None)
        )
    document = message.document
    if document is not None and message.animation is None:
        items.append(
            MediaItem(
                DOCUMENT,
                document.file_id,
                document.file_size,
                document.mime_type,
                file_name=document.file_name,
            )
        )
    for kind, file in ((VOICE, message.voice), (AUDIO, message.audio)):
        if file is not None:
            name = getattr(file, "file_name", None)
            items.append(
                MediaItem(kind, file.file_id, file.file_size, file.mime_type, file_name=name)
            )
    rendered = rendered_text(message)
    if rendered is not None:
        items.append(MediaItem(rendered[0], text=rendered[1]))
    return tuple(items)


def rendered_text(message: Message) -> tuple[str, str] | None:
    """A sticker, venue, location or contact as (kind, text for the model)."""
    if message.sticker is not None:
        sticker = message.sticker
        return "sticker", f"[sticker: {sticker.emoji or 'no emoji'}]"
    if message.venue is not None:
        venue = message.venue
        where = venue.location
        return "venue", (
            f"[venue: {venue.title}, {venue.address} "
            f"(latitude {where.latitude}, longitude {where.longitude})]"
        )
    if message.location is not None:
        where = message.location
        return "location", f"[location: latitude {where.latitude}, longitude {where.longitude}]"
    if message.contact is not None:
        contact = message.contact
        name = " ".join(part for part in (contact.first_name, contact.last_name) if part)
        return "contact", f"[contact: {name}, phone {contact.phone_number}]"
    return None
