"""Chat commands shared by every front end: /new, /stop, /compress, /usage, /status, /help."""

from __future__ import annotations

from dataclasses import dataclass

HELP_TEXT = """Commands:
/new - start a fresh session (the current one stays stored)
/stop - stop the answer in progress
/compress [focus] - compact the conversation now, optionally focusing the summary on a topic
/usage - tokens, cache hit rate and cost of this session
/status - session, context size and engine status
/help - this list"""

COMMANDS = ("new", "stop", "compress", "usage", "status", "help")
COMMAND_DESCRIPTIONS = {
    "new": "Start a fresh session",
    "stop": "Stop the answer in progress",
    "compress": "Compact the conversation now",
    "usage": "Tokens, cache hit rate and cost",
    "status": "Session and context status",
    "help": "List the commands",
}


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed chat command."""

    name: str
    argument: str


def parse_command(text: str, bot_username: str | None = None) -> Command | None:
    """``/compress focus`` -> Command("compress", "focus"); None for ordinary text.

    ``/cmd@botname`` (Telegram groups) is accepted when the name is ours or not given.
    """
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    head, _, argument = stripped[1:].partition(" ")
    name, _, target = head.partition("@")
    if target and bot_username and target.lower() != bot_username.lower():
        return None
    name = name.lower()
    if name == "start":
        name = "help"
    if name not in COMMANDS:
        return None
    return Command(name, argument.strip())
