"""Chat commands shared by every front end (see :mod:`gateway.commands.registry`).

Adding a command: write its handler (``async (CommandContext) -> str``) and register a
:class:`CommandSpec` for it in :func:`default_registry`.
"""

from __future__ import annotations

from gateway.commands.builtin import BUILTIN_COMMANDS
from gateway.commands.registry import (
    Command,
    CommandContext,
    CommandHost,
    CommandRegistry,
    CommandSpec,
    parse_call,
)

__all__ = [
    "Command",
    "CommandContext",
    "CommandHost",
    "CommandRegistry",
    "CommandSpec",
    "default_registry",
    "parse_call",
    "parse_command",
]


def default_registry() -> CommandRegistry:
    """The commands the gateway and ``hermes chat`` understand."""
    return CommandRegistry(BUILTIN_COMMANDS)


_DEFAULT = default_registry()


def parse_command(text: str, bot_username: str | None = None) -> Command | None:
    """A call of a built-in command (see :meth:`CommandRegistry.parse`)."""
    return _DEFAULT.parse(text, bot_username)
