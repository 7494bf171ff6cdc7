"""Rendering the model's Markdown as Telegram HTML.

Telegram's HTML mode knows a handful of tags; this renders the Markdown a chat model writes
(fenced code, inline code, bold, italic, strikethrough, links, headings) into them and escapes
everything else. Whatever it does not recognise stays as literal text, so the worst case is a
visible asterisk, never lost content. Callers still fall back to plain text when Telegram
rejects the result.
"""

from __future__ import annotations

import html
import re

_FENCED_BLOCK = re.compile(r"^```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^```[ \t]*$|\Z)", re.M | re.S)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(
    r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)"
)
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_PLACEHOLDER = "\x00{}\x00"
_PLACEHOLDER_PATTERN = re.compile("\x00(\\d+)\x00")


def markdown_to_telegram_html(text: str) -> str:
    """Telegram-HTML for a Markdown text (code spans and blocks are kept verbatim, escaped)."""
    protected: list[str] = []

    def protect(fragment: str) -> str:
        protected.append(fragment)
        return _PLACEHOLDER.format(len(protected) - 1)

    def fenced(match: re.Match[str]) -> str:
        language, body = match.group(1), match.group(2).rstrip("\n")
        css = f' class="language-{html.escape(language)}"' if language else ""
        return protect(f"<pre><code{css}>{html.escape(body, quote=False)}</code></pre>")

    def inline_code(match: re.Match[str]) -> str:
        return protect(f"<code>{html.escape(match.group(1), quote=False)}</code>")

    def link(match: re.Match[str]) -> str:
        label, url = match.group(1), match.group(2)
        label_html = _inline_styles(html.escape(label, quote=False))
        return protect(f'<a href="{html.escape(url, quote=True)}">{label_html}</a>')

    text = _FENCED_BLOCK.sub(fenced, text.replace("\x00", ""))
    text = _INLINE_CODE.sub(inline_code, text)
    text = _LINK.sub(link, text)
    text = _inline_styles(html.escape(text, quote=False))
    text = _HEADING.sub(r"<b>\1</b>", text)
    return _PLACEHOLDER_PATTERN.sub(lambda m: protected[int(m.group(1))], text)


def _inline_styles(escaped: str) -> str:
    """Bold, italic and strikethrough on already-escaped text."""
    escaped = _BOLD.sub(lambda m: f"<b>{m.group(1) or m.group(2)}</b>", escaped)
    escaped = _STRIKE.sub(r"<s>\1</s>", escaped)
    return _ITALIC.sub(lambda m: f"<i>{m.group(1) or m.group(2)}</i>", escaped)
