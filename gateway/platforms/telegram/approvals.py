"""Approval prompts on Telegram: an HTML message with an inline keyboard, and the buttons'
``callback_data`` (``ap:<id>:<choice>``, far below Telegram's 64 bytes)."""

from __future__ import annotations

import html

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from gateway.platforms.base import APPROVAL_CHOICES

CALLBACK_PREFIX = "ap"
MAX_CALLBACK_DATA_BYTES = 64
PARSE_MODE = "HTML"


def approval_text(tool: str, preview: str) -> str:
    """The prompt: the tool's name and its (already bounded) arguments, HTML-escaped."""
    return (
        f"The assistant wants to run <b>{html.escape(tool)}</b> with:\n"
        f"<pre>{html.escape(preview)}</pre>\nAllow it?"
    )


def closed_text(tool: str, preview: str, outcome: str) -> str:
    """The prompt once answered: the same, with the outcome instead of the question."""
    return (
        f"<b>{html.escape(tool)}</b> with:\n<pre>{html.escape(preview)}</pre>\n"
        f"{html.escape(outcome)}"
    )


def callback_data(approval_id: str, choice: str) -> str:
    """One button's data (ValueError past Telegram's 64 bytes)."""
    data = f"{CALLBACK_PREFIX}:{approval_id}:{choice}"
    if len(data.encode()) > MAX_CALLBACK_DATA_BYTES:
        raise ValueError("callback_data over 64 bytes")
    return data


def approval_keyboard(approval_id: str) -> InlineKeyboardMarkup:
    """Allow once / Always in this chat / Deny, in one row."""
    row = [
        InlineKeyboardButton(label, callback_data=callback_data(approval_id, choice))
        for choice, label in APPROVAL_CHOICES
    ]
    return InlineKeyboardMarkup([row])


def parse_callback_data(data: str | None) -> tuple[str, str] | None:
    """(approval id, choice) of one of our buttons; None for anything else."""
    parts = (data or "").split(":")
    if len(parts) != 3 or parts[0] != CALLBACK_PREFIX:
        return None
    return parts[1], parts[2]
