"""What a Discord message carried besides its text, as :class:`MediaItem` values.

Attachments are described by their CDN URL (the adapter downloads them through discord.py's
own HTTP client); stickers are rendered as their name. Videos are named as content the bot does
not read.
"""

from __future__ import annotations

import warnings

from gateway.messages.media_items import AUDIO, DOCUMENT, VOICE, MediaItem

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # discord.py imports audioop on 3.11
    import discord

IMAGE = "image"


def discord_media(message: discord.Message) -> tuple[tuple[MediaItem, ...], tuple[str, ...]]:
    """The message's readable media, and the kinds it carries that the bot does not read."""
    items: list[MediaItem] = []
    unread: list[str] = []
    for attached in message.attachments:
        family = (attached.content_type or "").split("/", 1)[0]
        if family == "video":
            unread.append("video")
            continue
        if attached.is_voice_message():
            kind = VOICE
        elif family == "audio":
            kind = AUDIO
        elif family == "image":
            kind = IMAGE
        else:
            kind = DOCUMENT
        items.append(
            MediaItem(
                kind,
                file_id=attached.url,
                size=attached.size,
                mime_type=attached.content_type,
                width=attached.width,
                height=attached.height,
                file_name=attached.filename,
            )
        )
    for sticker in message.stickers:
        items.append(MediaItem("sticker", text=f"[sticker: {sticker.name}]"))
    return tuple(items), tuple(unread)
