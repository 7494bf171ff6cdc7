"""What the bot says about content it does not read (videos, polls, GIFs, ...).

Adapters name each part of a message the bot does not read with one of :data:`KIND_NAMES`'
keys; the runner answers a message with nothing else in it with :func:`unsupported_reply`, and
prefixes the answer to a message that also carried something it read with
:func:`unread_attachment_notice`, so no message goes unanswered and nobody believes the bot saw
their video. A message with nothing in it at all (a bare mention) gets
:func:`empty_message_reply`.
"""

from __future__ import annotations

from collections.abc import Iterable

KIND_NAMES = {
    "animation": "GIFs",
    "audio": "audio files",
    "contact": "contacts",
    "dice": "dice",
    "document": "files",
    "game": "games",
    "image": "images",
    "location": "locations",
    "photo": "photos",
    "poll": "polls",
    "sticker": "stickers",
    "story": "stories",
    "venue": "venues",
    "video": "videos",
    "video_note": "video messages",
    "voice": "voice messages",
}
"""Attachment kinds and how a reply names them."""
OTHER_KIND = "other"
"""Any kind not listed above."""
READABLE_WITHOUT_VOICE = "text, photos, PDFs and text files"
"""What the bot reads when no transcription endpoint is configured."""


def kinds_text(kinds: Iterable[str]) -> str:
    """``photos``, ``photos and stickers``, ``photos, files and stickers`` (each kind once)."""
    names = list(dict.fromkeys(KIND_NAMES.get(kind, "attachments of that kind") for kind in kinds))
    if not names:
        return "attachments"
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def unsupported_reply(kinds: Iterable[str], readable: str = READABLE_WITHOUT_VOICE) -> str:
    """The answer to messages that carried only content the bot does not read
    (``readable``: what it does read, e.g. "text, photos, PDFs and text files")."""
    return f"Sorry, I can't read {kinds_text(kinds)} yet. I can read {readable}."


def unread_attachment_notice(kinds: Iterable[str]) -> str:
    """Said before the answer when a message came with content the bot did not read."""
    return f"(I can't look at {kinds_text(kinds)}, so I answered without them.)"


def empty_message_reply(readable: str) -> str:
    """The answer to a message with nothing in it, such as a bare mention in a group."""
    return f"Hi! Send me a message ({readable}) and I'll answer. /help lists my commands."
