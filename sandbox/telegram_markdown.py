"""Telegram's MarkdownV2 and legacy Markdown parse modes: markup in, plain text plus entities out.

MarkdownV2 is strict: outside entities every reserved character must be escaped with a
backslash, and every entity must be closed. Broken markup raises `MarkupError` with a message in
Telegram's style ("Character '.' is reserved and must be escaped with the preceding '\\'").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox.telegram_html import MarkupError
from sandbox.telegram_text import Entity, TextBuilder, link_fields, utf8_offset

RESERVED_V2 = frozenset("_*[]()~`>#+-=|{}.!")
"""Characters MarkdownV2 requires escaped outside entities."""

_HIGHEST_ESCAPABLE = 126
_ENTITY_NAMES = {
    "bold": "Bold",
    "italic": "Italic",
    "underline": "Underline",
    "strikethrough": "Strikethrough",
    "spoiler": "Spoiler",
    "code": "Code",
    "pre": "Pre",
    "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
    "blockquote": "BlockQuote",
    "expandable_blockquote": "ExpandableBlockQuote",
}
_QUOTES = ("blockquote", "expandable_blockquote")
_CUSTOM_EMOJI_URL = re.compile(r"tg://emoji\?id=(\d+)$")
_PRE_LANGUAGE = re.compile(r"[^\s`]+(?=[ \t\r\n])")


@dataclass
class _Open:
    kind: str
    start: int
    byte_offset: int
    language: str | None = None


def _escapable(char: str) -> bool:
    return 0 < ord(char) <= _HIGHEST_ESCAPABLE


class _MarkdownV2Parser:
    """One pass over MarkdownV2 source with a stack of open entities."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.index = 0
        self.builder = TextBuilder()
        self.stack: list[_Open] = []
        self.entities: list[Entity] = []
        self.quote_line_end = 0  # where the quoted text ended before the last newline

    def parse(self) -> tuple[str, list[Entity]]:
        source = self.source
        while self.index < len(source):
            top = self.stack[-1].kind if self.stack else None
            if top in ("code", "pre"):
                self._code_character(top)
            elif self.index == 0 or source[self.index - 1] == "\n":
                self._line_start()
                if self.index < len(source):
                    self._character()
            else:
                self._character()
        if self.stack and self.stack[-1].kind in _QUOTES:
            self._close(self.builder.utf16_position)
        if self.stack:
            self._fail_unclosed(self.stack[-1])
        return self.builder.text(), self.entities

    def _emit(self, text: str) -> None:
        if text == "\n" and any(entry.kind in _QUOTES for entry in self.stack):
            self.quote_line_end = self.builder.utf16_position
        self.builder.append(text)

    def _offset(self) -> int:
        return utf8_offset(self.source, self.index)

    def _fail_unclosed(self, entry: _Open) -> None:
        name = _ENTITY_NAMES[entry.kind]
        raise MarkupError(f"Can't find end of {name} entity at byte offset {entry.byte_offset}")

    def _line_start(self) -> None:
        """Open, continue or close a block quotation at the start of a line."""
        source, index = self.source, self.index
        quoted = any(entry.kind in _QUOTES for entry in self.stack)
        if quoted and source.startswith(">", index):
            self.index += 1
        elif quoted:
            if self.stack[-1].kind not in _QUOTES:
                self._fail_unclosed(self.stack[-1])
            self._close(self.quote_line_end)
        elif source.startswith("**>", index):
            start = self.builder.utf16_position
            self.stack.append(_Open("expandable_blockquote", start, self._offset()))
            self.index += 3
        elif source.startswith(">", index):
            self.stack.append(_Open("blockquote", self.builder.utf16_position, self._offset()))
            self.index += 1

    def _code_character(self, top: str) -> None:
        source, index = self.source, self.index
        char = source[index]
        if char == "\\" and index + 1 < len(source) and _escapable(source[index + 1]):
            self._emit(source[index + 1])
            self.index += 2
        elif top == "pre" and source.startswith("```", index):
            self.index += 3
            self._close(self.builder.utf16_position)
        elif top == "code" and char == "`":
            self.index += 1
            self._close(self.builder.utf16_position)
        else:
            self._emit(char)
            self.index += 1

    def _character(self) -> None:
        source, index = self.source, self.index
        char = source[index]
        if char == "\\" and index + 1 < len(source) and _escapable(source[index + 1]):
            self._emit(source[index + 1])
            self.index += 2
        elif char not in RESERVED_V2:
            self._emit(char)
            self.index += 1
        elif self._closes_expandable_quote():
            self.index += 2
            self._close(self.builder.utf16_position)
        elif self._closes_top(char):
            self._close_inline()
        else:
            self._open_inline(char)

    def _closes_expandable_quote(self) -> bool:
        source, end = self.source, self.index + 2
        at_line_end = end >= len(source) or source[end] == "\n"
        top = self.stack[-1].kind if self.stack else None
        return (
            top == "expandable_blockquote" and source.startswith("||", self.index) and at_line_end
        )

    def _closes_top(self, char: str) -> bool:
        if not self.stack:
            return False
        following = self.source[self.index + 1 : self.index + 2]
        return {
            "bold": char == "*",
            "italic": char == "_" and following != "_",
            "underline": char == "_" and following == "_",
            "strikethrough": char == "~",
            "spoiler": char == "|" and following == "|",
            "text_link": char == "]",
            "custom_emoji": char == "]",
        }.get(self.stack[-1].kind, False)

    def _open_inline(self, char: str) -> None:
        source, index = self.source, self.index
        following = source[index + 1 : index + 2]
        kind, width = {
            "*": ("bold", 1),
            "~": ("strikethrough", 1),
            "[": ("text_link", 1),
            "_": ("underline", 2) if following == "_" else ("italic", 1),
            "|": ("spoiler", 2) if following == "|" else ("", 0),
            "!": ("custom_emoji", 2) if following == "[" else ("", 0),
            "`": ("pre", 3) if source.startswith("```", index) else ("code", 1),
        }.get(char, ("", 0))
        if not kind:
            raise MarkupError(
                f"Character '{char}' is reserved and must be escaped with the preceding '\\'"
            )
        if any(entry.kind == kind for entry in self.stack):
            self._fail_unclosed(self.stack[-1])
        entry = _Open(kind, self.builder.utf16_position, self._offset())
        self.index += width
        if kind == "pre":
            self._read_pre_language(entry)
        self.stack.append(entry)

    def _read_pre_language(self, entry: _Open) -> None:
        language = _PRE_LANGUAGE.match(self.source, self.index)
        if language:
            entry.language = language.group()
            self.index = language.end()
        if self.source.startswith("\n", self.index):
            self.index += 1  # the newline after ``` (and the language) is not part of the code

    def _close_inline(self) -> None:
        kind = self.stack[-1].kind
        self.index += 2 if kind in ("underline", "spoiler") else 1
        url = self._read_url() if kind in ("text_link", "custom_emoji") else None
        self._close(self.builder.utf16_position, url)

    def _read_url(self) -> str | None:
        source = self.source
        if not source.startswith("(", self.index):
            return None
        start_offset = self._offset()
        url: list[str] = []
        index = self.index + 1
        while index < len(source) and source[index] != ")":
            if source[index] == "\\" and index + 1 < len(source):
                index += 1
            url.append(source[index])
            index += 1
        if index >= len(source):
            raise MarkupError(f"Can't find end of a URL at byte offset {start_offset}")
        self.index = index + 1
        return "".join(url)

    def _close(self, end: int, url: str | None = None) -> None:
        entry = self.stack.pop()
        length = end - entry.start
        entity: Entity = {"type": entry.kind, "offset": entry.start, "length": length}
        if entry.kind == "custom_emoji":
            emoji = _CUSTOM_EMOJI_URL.match(url or "")
            if emoji is None:
                raise MarkupError("Custom emoji entity must contain a tg://emoji URL")
            entity["custom_emoji_id"] = emoji.group(1)
        elif entry.kind == "text_link":
            if not url:
                return  # "[text]" without a URL is plain text
            entity.update(link_fields(url))
        elif entry.kind == "pre" and entry.language:
            entity["language"] = entry.language
        if length > 0:
            self.entities.append(entity)


def parse_markdown_v2(source: str) -> tuple[str, list[Entity]]:
    """Convert MarkdownV2 into (plain text, entities); raise `MarkupError` if malformed."""
    return _MarkdownV2Parser(source).parse()


_LEGACY_DELIMITERS = {"*": "bold", "_": "italic", "`": "code"}
_LEGACY_ESCAPABLE = frozenset("_*`[")


def parse_markdown_legacy(source: str) -> tuple[str, list[Entity]]:
    """Convert legacy Markdown (*bold* _italic_ `code` ```pre``` [text](url)) to text + entities.

    Entities do not nest and nothing else needs escaping; an unclosed one is an error.
    """
    builder = TextBuilder()
    entities: list[Entity] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\" and source[index + 1 : index + 2] in _LEGACY_ESCAPABLE:
            builder.append(source[index + 1])
            index += 2
            continue
        if char not in _LEGACY_DELIMITERS and char != "[":
            builder.append(char)
            index += 1
            continue
        delimiter = "```" if source.startswith("```", index) else ("]" if char == "[" else char)
        start = index + (3 if delimiter == "```" else 1)
        end = source.find(delimiter, start)
        if end < 0:
            offset = utf8_offset(source, index)
            raise MarkupError(f"Can't find end of the entity starting at byte offset {offset}")
        entity_start = builder.utf16_position
        builder.append(source[start:end])
        index = end + len(delimiter)
        length = builder.utf16_position - entity_start
        entity: Entity = {"type": "", "offset": entity_start, "length": length}
        if delimiter == "]":
            url_end = source.find(")", index) if source.startswith("(", index) else -1
            if url_end < 0:
                continue  # "[text]" without a URL stays plain text
            entity.update(link_fields(source[index + 1 : url_end]))
            index = url_end + 1
        else:
            entity["type"] = "pre" if delimiter == "```" else _LEGACY_DELIMITERS[char]
        if entity["length"] > 0:
            entities.append(entity)
    return builder.text(), entities
