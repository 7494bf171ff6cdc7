"""What the bot says about content it cannot read yet (photos, voice notes, files, ...).

Adapters name each non-text part of a message with one of :data:`KIND_NAMES`' keys; the runner
answers a message with nothing else in it with :func:`unsupported_reply`, and prefixes the answer
to a message whose text came with an attachment with :func:`unread_attachment_notice`, so no
message goes unanswered and nobody believes the bot saw their picture.
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


def kinds_text(kinds: Iterable[str]) -> str:
    """``photos``, ``photos and stickers``, ``photos, files and stickers`` (each kind once)."""
    names = list(dict.fromkeys(KIND_NAMES.get(kind, "attachments of that kind") for kind in kinds))
    if not names:
        return "attachments"
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def unsupported_reply(kinds: Iterable[str]) -> str:
    """The answer to messages that carried only content the bot cannot read yet."""
    return (
        f"Sorry, I can't read {kinds_text(kinds)} yet; I can only read text for now. "
        "Please send your message as text."
    )


def unread_attachment_notice(kinds: Iterable[str]) -> str:
    """Said before the answer when a message's text came with content the bot did not read."""
    return (
        f"(I could not look at what you attached: {kinds_text(kinds)} are not supported yet. "
        "I answered your text only.)"
    )
