"""Splitting a reply into messages that fit a platform's length limit.

Pure functions. Telegram counts a message's length in UTF-16 code units (4096), Discord in
characters (2000). A cut prefers a paragraph break, then a line break, then a space, and only
then falls back to a hard cut. A fenced code block cut in two is closed at the end of one part
and reopened (with its language) at the start of the next, so both render as code.

A platform that formats a part before sending it (Telegram's MarkdownV2) passes its renderer:
each part is then measured after rendering too, since escapes and markup can make the formatted
text longer than the Markdown it came from. The parts stay Markdown, so the plain-text fallback
of a part fits as well.
"""

from __future__ import annotations

from collections.abc import Callable

TELEGRAM_MESSAGE_LIMIT = 4096
"""Telegram's maximum message length, in UTF-16 code units."""
DISCORD_MESSAGE_LIMIT = 2000
"""Discord's maximum message length, in characters."""

FENCE = "```"
FENCE_CLOSE = "\n" + FENCE
MIN_LIMIT = 32
"""Below this a limit leaves no room for a reopened code fence plus content."""

LengthFn = Callable[[str], int]
RenderFn = Callable[[str], str]


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (characters outside the BMP count 2)."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate (it can reach us from a platform) counts 1, as in UTF-16.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def split_message(
    text: str, limit: int, *, length: LengthFn = len, render: RenderFn | None = None
) -> list[str]:
    """Split ``text`` into parts each at most ``limit`` long as measured by ``length``.

    With ``render`` (what a part is sent as), each part's rendering is at most ``limit`` long
    too. Empty or whitespace-only text gives no parts. Raises ValueError for a limit too small
    to hold a reopened code fence.
    """
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT} (got {limit})")

    def sent_length(part: str) -> int:
        plain = length(part)
        if render is None or plain > limit:  # too long already: no need to render it
            return plain
        return max(plain, length(render(part)))

    parts: list[str] = []
    rest = text.strip("\n")
    while sent_length(rest) > limit:
        head, rest = _fitting_head(rest, limit, length, sent_length)
        if head.strip():
            parts.append(head)
    if rest.strip():
        parts.append(rest)
    return parts


def _fitting_head(
    text: str, limit: int, length: LengthFn, sent_length: LengthFn
) -> tuple[str, str]:
    """The first part of ``text`` (cut at its best boundary) whose sent length fits ``limit``,
    and the rest.

    The Markdown budget shrinks by how much the last try grew when sent, until it fits:
    usually one or two renderings.
    """
    budget = limit - length(FENCE_CLOSE)
    while True:
        head, tail = _cut(text, budget, length)
        sent = sent_length(head)
        if sent <= limit or budget <= 1:
            return head, tail
        budget = min(budget - 1, length(head) * limit // sent)


def _cut(text: str, budget: int, length: LengthFn) -> tuple[str, str]:
    """``text`` cut at its best boundary within ``budget``; a code fence left open is closed
    in the head and reopened in the tail."""
    cut = _best_cut(text, _fitting_chars(text, budget, length))
    head, tail = text[:cut].rstrip(), text[cut:]
    open_fence = _open_fence_line(head)
    if open_fence is None:
        return head, tail.lstrip()
    return head + FENCE_CLOSE, open_fence + "\n" + tail.lstrip("\n")


def _fitting_chars(text: str, budget: int, length: LengthFn) -> int:
    """How many leading characters of ``text`` fit in ``budget`` (at least one)."""
    used = 0
    for index, char in enumerate(text):
        used += length(char)
        if used > budget:
            return max(index, 1)
    return len(text)


def _best_cut(text: str, window: int) -> int:
    """Where to cut within the first ``window`` characters: paragraph, line, space, else hard.

    A boundary in the first half of the window is not worth it; a hard cut keeps parts full.
    """
    floor = window // 2
    for separator in ("\n\n", "\n", " "):
        position = text.rfind(separator, floor, window)
        if position > 0:
            return position + len(separator) if separator == " " else position
    return window


def _open_fence_line(text: str) -> str | None:
    """The opening line (with its language) of a code fence left open at the end of ``text``."""
    open_line: str | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(FENCE):
            open_line = None if open_line is not None else stripped
    return open_line
