"""Telegram's text arithmetic: UTF-16 lengths, entity building, trimming and auto-detection.

Telegram measures message text and entity offsets in UTF-16 code units, so an emoji outside
the Basic Multilingual Plane counts 2. Everything here works in those units.
"""

from __future__ import annotations

import re
from typing import Any

Entity = dict[str, Any]

MAX_MESSAGE_UTF16 = 4096
"""The longest message text Telegram accepts or delivers, in UTF-16 code units."""

_BMP_LIMIT = 0xFFFF
# Telegram strips these from both ends of a message after its entities are parsed.
_TRIMMED_CHARACTERS = " \t\r\n"

_COMMAND_PATTERN = re.compile(r"(?<![\w/])/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?(?![\w/])")
_MENTION_PATTERN = re.compile(r"(?<![\w@/])@[A-Za-z0-9_]{5,32}(?!\w)")
_URL_PATTERN = re.compile(r"https?://[^\s<>\"]+")
_USER_LINK = re.compile(r"tg://user\?id=(\d+)$")


def utf16_len(text: str) -> int:
    """Return the length of `text` the way Telegram counts it (UTF-16 code units)."""
    return len(text) + sum(1 for char in text if ord(char) > _BMP_LIMIT)


def utf8_offset(text: str, index: int) -> int:
    """Return the UTF-8 byte offset of character `index`; Telegram's parse errors cite it."""
    return len(text[:index].encode("utf-8"))


class TextBuilder:
    """Accumulates plain text while tracking its UTF-16 length, for markup parsers."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self.utf16_position = 0

    def append(self, text: str) -> None:
        """Add `text` to the end of the plain text."""
        self._parts.append(text)
        self.utf16_position += utf16_len(text)

    def text(self) -> str:
        """Return the plain text built so far."""
        return "".join(self._parts)


def link_fields(url: str) -> Entity:
    """Type and payload of a link entity: a tg://user?id= link is a mention of that user."""
    user_link = _USER_LINK.match(url)
    if user_link is None:
        return {"type": "text_link", "url": url}
    user = {"id": int(user_link.group(1)), "is_bot": False, "first_name": "User"}
    return {"type": "text_mention", "user": user}


def sort_entities(entities: list[Entity]) -> list[Entity]:
    """Order entities as Telegram returns them: by offset, outer (longer) entity first."""
    return sorted(entities, key=lambda entity: (entity["offset"], -entity["length"]))


def trim_text(text: str, entities: list[Entity]) -> tuple[str, list[Entity]]:
    """Strip surrounding whitespace like Telegram does, moving and clipping entities to match."""
    stripped_start = text.lstrip(_TRIMMED_CHARACTERS)
    lead = utf16_len(text) - utf16_len(stripped_start)
    trimmed = stripped_start.rstrip(_TRIMMED_CHARACTERS)
    new_length = utf16_len(trimmed)
    adjusted: list[Entity] = []
    for entity in entities:
        start = max(entity["offset"] - lead, 0)
        end = min(entity["offset"] + entity["length"] - lead, new_length)
        if end > start:
            adjusted.append({**entity, "offset": start, "length": end - start})
    return trimmed, adjusted


def _utf16_index(text: str, char_index: int) -> int:
    return utf16_len(text[:char_index])


def detect_entities(text: str) -> list[Entity]:
    """Find the entities Telegram marks by itself in a user's message: commands, mentions, URLs."""
    found: list[Entity] = []
    taken: list[tuple[int, int]] = []
    for entity_type, pattern in (
        ("bot_command", _COMMAND_PATTERN),
        ("mention", _MENTION_PATTERN),
        ("url", _URL_PATTERN),
    ):
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            taken.append((match.start(), match.end()))
            offset = _utf16_index(text, match.start())
            found.append(
                {"type": entity_type, "offset": offset, "length": utf16_len(match.group())}
            )
    return sort_entities(found)


def split_like_client(text: str, limit: int = MAX_MESSAGE_UTF16) -> list[str]:
    """Split an over-long text into pieces of at most `limit` UTF-16 units.

    Official Telegram apps send a long paste as several consecutive messages, preferring to
    cut at a newline or space; a bot receives each piece as its own update.
    """
    pieces: list[str] = []
    rest = text
    while utf16_len(rest) > limit:
        cut = _last_fitting_index(rest, limit)
        boundary = max(rest.rfind("\n", 0, cut), rest.rfind(" ", 0, cut))
        if boundary > 0:
            cut = boundary + 1
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        pieces.append(rest)
    return pieces


def _last_fitting_index(text: str, limit: int) -> int:
    """Return how many characters of `text` fit in `limit` UTF-16 units (never halving a pair)."""
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > _BMP_LIMIT else 1
        if units > limit:
            return index
    return len(text)
