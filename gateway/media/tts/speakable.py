"""An answer as it is read aloud: what a listener can follow, in parts a provider accepts.

Code blocks, tables and links are for reading, not listening: a short phrase stands in for each
(a link keeps its words). Markdown marks are dropped. The result is split at sentence
boundaries into parts of at most ``max_chars`` characters (a sentence longer than that is cut
at word boundaries).
"""

from __future__ import annotations

import re

CODE_PHRASE = "(There is a code block in the text.)"
TABLE_PHRASE = "(There is a table in the text.)"
LINK_PHRASE = "a link"

_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_TABLE = re.compile(r"(?:^[ \t]*\|.*\|[ \t]*(?:\n|\Z))+", re.MULTILINE)
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_INLINE_CODE = re.compile(r"`([^`]*)`")
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+", re.MULTILINE)
_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~)(?=\S)(.+?)(?<=\S)\1")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n{2,}")
_SPACES = re.compile(r"[ \t]+")


def speakable_text(markdown: str) -> str:
    """``markdown`` as words to read aloud (code, tables and URLs replaced by phrases)."""
    text = _FENCED.sub(f"\n\n{CODE_PHRASE}\n\n", markdown)
    text = _TABLE.sub(f"\n\n{TABLE_PHRASE}\n\n", text)
    text = _MD_LINK.sub(lambda m: m.group(1).strip() or LINK_PHRASE, text)
    text = _URL.sub(LINK_PHRASE, text)
    text = _INLINE_CODE.sub(r"\1", text)
    text = _HEADING.sub("", text)
    text = _BULLET.sub("", text)
    text = _EMPHASIS.sub(r"\2", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _words_within(sentence: str, max_chars: int) -> list[str]:
    """A sentence too long for one part, cut at spaces (a word too long is cut anywhere)."""
    pieces: list[str] = []
    current = ""
    for word in sentence.split():
        while len(word) > max_chars:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(word[:max_chars])
            word = word[max_chars:]
        candidate = f"{current} {word}".strip()
        if len(candidate) > max_chars:
            pieces.append(current)
            candidate = word
        current = candidate
    if current:
        pieces.append(current)
    return pieces


def speakable_parts(markdown: str, max_chars: int) -> list[str]:
    """:func:`speakable_text` in parts of at most ``max_chars``, split between sentences."""
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    sentences = [s.strip() for s in _SENTENCE_END.split(speakable_text(markdown))]
    parts: list[str] = []
    current = ""
    for sentence in filter(None, sentences):
        for piece in _words_within(sentence, max_chars):
            candidate = f"{current} {piece}".strip()
            if len(candidate) > max_chars:
                parts.append(current)
                candidate = piece
            current = candidate
    if current:
        parts.append(current)
    return parts
