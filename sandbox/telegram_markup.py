"""Turn a sendMessage text and its parse_mode into the plain text and entities Telegram stores."""

from __future__ import annotations

from typing import Any

from sandbox.telegram_html import MarkupError, parse_html
from sandbox.telegram_markdown import parse_markdown_legacy, parse_markdown_v2
from sandbox.telegram_text import Entity, sort_entities, trim_text, utf16_len

__all__ = ["MarkupError", "UnsupportedParseMode", "format_message_text"]

_PARSERS = {
    "html": parse_html,
    "markdownv2": parse_markdown_v2,
    "markdown": parse_markdown_legacy,
}
# Entities that may not contain others: Telegram drops what is nested inside them.
_OPAQUE_TYPES = ("code", "pre")
_QUOTE_TYPES = ("blockquote", "expandable_blockquote")


class UnsupportedParseMode(ValueError):
    """The parse_mode is none of HTML, MarkdownV2 or Markdown."""


def format_message_text(
    text: str, parse_mode: str | None, explicit_entities: list[Any] | None = None
) -> tuple[str, list[Entity]]:
    """Return (plain text, entities) for a message as Telegram would store it.

    Explicit `entities` win over `parse_mode`, as in the Bot API. Raises `MarkupError` for
    malformed markup and `UnsupportedParseMode` for an unknown mode. Surrounding whitespace is
    trimmed afterwards, so an all-markup text can end up empty.
    """
    if explicit_entities is not None:
        plain, entities = text, _valid_explicit_entities(text, explicit_entities)
    elif parse_mode:
        parser = _PARSERS.get(parse_mode.lower())
        if parser is None:
            raise UnsupportedParseMode(parse_mode)
        plain, entities = parser(text)
    else:
        plain, entities = text, []
    plain, entities = trim_text(plain, _drop_forbidden_nesting(entities))
    return plain, sort_entities(entities)


def _valid_explicit_entities(text: str, entities: list[Any]) -> list[Entity]:
    """Keep the well-formed entities that fit inside the text, as Telegram silently does."""
    length = utf16_len(text)
    kept: list[Entity] = []
    for entity in entities:
        if not isinstance(entity, dict):
            continue
        offset, size = entity.get("offset"), entity.get("length")
        if isinstance(offset, int) and isinstance(size, int) and size > 0 and offset >= 0:
            if offset + size <= length and isinstance(entity.get("type"), str):
                kept.append(dict(entity))
    return kept


def _drop_forbidden_nesting(entities: list[Entity]) -> list[Entity]:
    """Remove entities inside code/pre and quotes inside quotes."""

    def inside(inner: Entity, outer: Entity) -> bool:
        return (
            inner is not outer
            and outer["offset"] <= inner["offset"]
            and inner["offset"] + inner["length"] <= outer["offset"] + outer["length"]
        )

    opaque = [entity for entity in entities if entity["type"] in _OPAQUE_TYPES]
    quotes = [entity for entity in entities if entity["type"] in _QUOTE_TYPES]
    kept: list[Entity] = []
    for entity in entities:
        if any(inside(entity, outer) for outer in opaque):
            continue
        if entity["type"] in _QUOTE_TYPES and any(inside(entity, outer) for outer in quotes):
            continue
        kept.append(entity)
    return kept
