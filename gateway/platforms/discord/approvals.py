"""Approval prompts on Discord: a message with a row of buttons (message components whose
``custom_id`` is ``ap:<id>:<choice>``), and the prompt's text (Discord Markdown, the
arguments in a code block with backticks defused)."""

from __future__ import annotations

import discord

from gateway.platforms.base import APPROVAL_CHOICES

CUSTOM_ID_PREFIX = "ap"
_STYLES = {
    "once": discord.ButtonStyle.primary,
    "always": discord.ButtonStyle.secondary,
    "deny": discord.ButtonStyle.danger,
}


def _code(text: str) -> str:
    return "```\n" + text.replace("`", "\u02cb") + "\n```"


def _name(tool: str) -> str:
    return "`" + tool.replace("`", "\u02cb") + "`"


def approval_text(tool: str, preview: str) -> str:
    """The prompt: the tool's name and its (already bounded) arguments."""
    return f"The assistant wants to run {_name(tool)} with:\n{_code(preview)}Allow it?"


def closed_text(tool: str, preview: str, outcome: str) -> str:
    """The prompt once answered."""
    return f"{_name(tool)} with:\n{_code(preview)}{outcome}"


def approval_view(approval_id: str) -> discord.ui.View:
    """Allow once / Always in this chat / Deny."""
    view = discord.ui.View(timeout=None)
    for choice, label in APPROVAL_CHOICES:
        custom_id = f"{CUSTOM_ID_PREFIX}:{approval_id}:{choice}"
        view.add_item(discord.ui.Button(label=label, custom_id=custom_id, style=_STYLES[choice]))
    return view


def parse_custom_id(custom_id: object) -> tuple[str, str] | None:
    """(approval id, choice) of one of our buttons; None for anything else."""
    parts = str(custom_id or "").split(":")
    if len(parts) != 3 or parts[0] != CUSTOM_ID_PREFIX:
        return None
    return parts[1], parts[2]
