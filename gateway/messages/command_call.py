"""A command call as written in a message (``/compress focus``), read once when it arrives.

This is message vocabulary, below everything that runs commands: an :class:`InboundMessage`
knows whether its text calls a command without knowing which commands exist
(:class:`gateway.commands.registry.CommandRegistry` resolves the name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CALL = re.compile(r"/([A-Za-z0-9_]{1,32})(?:@(\S*))?(?:\s+(.*))?", re.DOTALL)
"""``/name``, optionally ``@bot`` (Telegram groups), then the argument after whitespace."""


@dataclass(frozen=True, slots=True)
class Command:
    """One command call as written: its name (lower case) and the text after it.

    ``target`` is the bot a Telegram group command was addressed to (``/new@name``)."""

    name: str
    argument: str
    target: str | None = None


def parse_call(text: str) -> Command | None:
    """``/compress focus`` -> Command("compress", "focus"); None for ordinary text.

    Any well-formed name is a call (known or not); ``/path/to/file`` is ordinary text."""
    match = _CALL.fullmatch(text.strip())
    if match is None:
        return None
    name, target, argument = match.groups()
    return Command(name.lower(), (argument or "").strip(), target or None)
