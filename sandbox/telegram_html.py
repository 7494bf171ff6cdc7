"""Telegram's HTML parse mode: markup in, plain text plus entities out.

Only the tags the Bot API documents are accepted, they must be balanced and properly nested,
and ``&``, ``<`` and ``>`` in text must be escaped. Malformed markup raises `MarkupError` with a
message in Telegram's style, which the API wraps as "Bad Request: can't parse entities: ...".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sandbox.telegram_text import Entity, TextBuilder, link_fields, utf8_offset

_TAG_ENTITY_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "span": "spoiler",
    "tg-spoiler": "spoiler",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)

_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_ATTRIBUTE = re.compile(
    r"\s+([A-Za-z][A-Za-z0-9_-]*)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+)))?"
)
_TAG_CLOSE = re.compile(r"\s*>")
_HTML_ENTITY = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,15});")
_PLAIN_RUN = re.compile(r"[^<>&]+")


class MarkupError(ValueError):
    """Markup Telegram cannot parse; the message is what follows "can't parse entities: "."""


@dataclass
class _OpenTag:
    name: str
    attributes: dict[str, str]
    start: int
    byte_offset: int
    language: str | None = None
    children_languages: list[str] = field(default_factory=list)


def parse_html(source: str) -> tuple[str, list[Entity]]:
    """Convert Telegram HTML into (plain text, entities); raise `MarkupError` if malformed."""
    builder = TextBuilder()
    stack: list[_OpenTag] = []
    entities: list[Entity] = []
    index = 0
    while index < len(source):
        char = source[index]
        if source.startswith("</", index):
            index = _close_tag(source, index, builder, stack, entities)
        elif char == "<":
            index = _open_tag(source, index, builder, stack)
        elif char == "&":
            decoded, index = _decode_entity(source, index)
            builder.append(decoded)
        elif char == ">":
            offset = utf8_offset(source, index)
            raise MarkupError(f'Character ">" must be escaped as "&gt;" at byte offset {offset}')
        else:
            run = _PLAIN_RUN.match(source, index)
            assert run is not None  # the character itself is plain
            builder.append(run.group())
            index = run.end()
    if stack:
        raise MarkupError(f'Can\'t find end tag corresponding to start tag "{stack[-1].name}"')
    return builder.text(), entities


def _decode_entity(source: str, index: int) -> tuple[str, int]:
    offset = utf8_offset(source, index)
    match = _HTML_ENTITY.match(source, index)
    if match is None:
        raise MarkupError(f'Character "&" must be escaped as "&amp;" at byte offset {offset}')
    name = match.group(1)
    if not name.startswith("#"):
        if name not in _NAMED_ENTITIES:
            raise MarkupError(f'Unsupported HTML entity "&{name};" at byte offset {offset}')
        return _NAMED_ENTITIES[name], match.end()
    code_point = int(name[2:], 16) if name[1:2] in ("x", "X") else int(name[1:])
    if code_point == 0 or code_point > _MAX_CODE_POINT or code_point in _SURROGATES:
        raise MarkupError(f'Invalid HTML entity "&{name};" at byte offset {offset}')
    return chr(code_point), match.end()


def _decode_attribute(value: str) -> str:
    """Resolve character references inside an attribute value (href="a?x=1&amp;y=2")."""
    return _HTML_ENTITY.sub(lambda match: _decode_entity(match.group(), 0)[0], value)


def _open_tag(source: str, index: int, builder: TextBuilder, stack: list[_OpenTag]) -> int:
    offset = utf8_offset(source, index)
    name_match = _TAG_NAME.match(source, index + 1)
    name = name_match.group().lower() if name_match else ""
    if name not in _TAG_ENTITY_TYPES:
        raise MarkupError(f'Unsupported start tag "{name}" at byte offset {offset}')
    assert name_match is not None
    position = name_match.end()
    attributes: dict[str, str] = {}
    while attribute := _ATTRIBUTE.match(source, position):
        value = next((group for group in attribute.groups()[1:] if group is not None), "")
        attributes[attribute.group(1).lower()] = _decode_attribute(value)
        position = attribute.end()
    closing = _TAG_CLOSE.match(source, position)
    if closing is None:
        raise MarkupError(f"Unclosed start tag at byte offset {offset}")
    _check_required_attributes(name, attributes, offset)
    if name == "code" and stack and stack[-1].name == "pre":
        language = attributes.get("class", "")
        if language.startswith("language-"):
            stack[-1].language = language.removeprefix("language-")
    stack.append(_OpenTag(name, attributes, builder.utf16_position, offset))
    return closing.end()


def _check_required_attributes(name: str, attributes: dict[str, str], offset: int) -> None:
    if name == "span" and attributes.get("class") != "tg-spoiler":
        raise MarkupError(f'Tag "span" must have class "tg-spoiler" at byte offset {offset}')
    if name == "tg-emoji" and not attributes.get("emoji-id", "").isdigit():
        raise MarkupError(f'Tag "tg-emoji" must have attribute "emoji-id" at byte offset {offset}')


def _close_tag(
    source: str,
    index: int,
    builder: TextBuilder,
    stack: list[_OpenTag],
    entities: list[Entity],
) -> int:
    offset = utf8_offset(source, index)
    name_match = _TAG_NAME.match(source, index + 2)
    closing = _TAG_CLOSE.match(source, name_match.end() if name_match else index + 2)
    if name_match is None or closing is None:
        raise MarkupError(f"Unclosed end tag at byte offset {offset}")
    name = name_match.group().lower()
    if not stack:
        raise MarkupError(f"Unexpected end tag at byte offset {offset}")
    if stack[-1].name != name:
        raise MarkupError(
            f'Unmatched end tag at byte offset {offset}, expected "</{stack[-1].name}>", '
            f'found "</{name}>"'
        )
    tag = stack.pop()
    inside_pre = bool(stack) and stack[-1].name == "pre"
    entity = _entity_for(tag, builder.utf16_position - tag.start, inside_pre)
    if entity is not None:
        entities.append(entity)
    return closing.end()


def _entity_for(tag: _OpenTag, length: int, inside_pre: bool) -> Entity | None:
    """Build the entity a closed tag stands for, or None when it marks nothing."""
    if length <= 0 or (tag.name == "code" and inside_pre):
        return None  # an empty entity vanishes; <pre><code> is one pre entity
    entity: Entity = {"type": _TAG_ENTITY_TYPES[tag.name], "offset": tag.start, "length": length}
    if tag.name == "a":
        href = tag.attributes.get("href", "")
        if not href:
            return None
        entity.update(link_fields(href))
    elif tag.name == "pre" and tag.language:
        entity["language"] = tag.language
    elif tag.name == "blockquote" and "expandable" in tag.attributes:
        entity["type"] = "expandable_blockquote"
    elif tag.name == "tg-emoji":
        entity["custom_emoji_id"] = tag.attributes["emoji-id"]
    return entity
