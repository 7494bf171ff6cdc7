"""Rendering the model's Markdown for Telegram.

Models answer in ordinary Markdown; Telegram wants its own MarkdownV2 dialect with a long list of
characters escaped. ``telegramify-markdown`` does that conversion (headings, lists, tables, code,
links, quotes), so this module only names the choice. The adapter splits a reply so that each
part fits Telegram's limit once rendered (:func:`gateway.text.split.split_message` with this
renderer), and still falls back to plain text when Telegram rejects the result, so formatting
can cost a message its styling, never its text.
"""

from __future__ import annotations

import telegramify_markdown

TELEGRAM_PARSE_MODE = "MarkdownV2"
"""The parse mode that :func:`markdown_to_telegram` renders for."""


def markdown_to_telegram(text: str) -> str:
    """Telegram MarkdownV2 for a Markdown text."""
    return telegramify_markdown.markdownify(text)
