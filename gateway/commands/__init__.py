"""Chat commands shared by every front end (see :mod:`gateway.commands.registry`).

Adding a command: write its handler (``async (CommandContext) -> str``) and register a
:class:`CommandSpec` for it in :func:`default_registry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.commands.builtin import BUILTIN_COMMANDS
from gateway.commands.registry import (
    Command,
    CommandContext,
    CommandHost,
    CommandRegistry,
    CommandSpec,
    parse_call,
)

if TYPE_CHECKING:
    from gateway.sessions.manager import SessionManager
    from gateway.sessions.runtime import SessionAddress

__all__ = [
    "Command",
    "CommandContext",
    "CommandHost",
    "CommandRegistry",
    "CommandSpec",
    "LocalHost",
    "default_registry",
    "parse_call",
    "parse_command",
    "run_local",
]


def default_registry() -> CommandRegistry:
    """The commands the gateway and ``hermes chat`` understand."""
    return CommandRegistry(BUILTIN_COMMANDS)


_DEFAULT = default_registry()


def parse_command(text: str, bot_username: str | None = None) -> Command | None:
    """A call of a built-in command (see :meth:`CommandRegistry.parse`)."""
    return _DEFAULT.parse(text, bot_username)


class LocalHost:
    """The host of a command run by the machine's owner (``hermes chat``): nothing runs beside
    it, no daemon health to tell."""

    async def stop_running(self, session_key: str) -> bool:
        return False

    async def health_text(self) -> str:
        return ""

    async def access_changed(self) -> None:
        return None


async def run_local(
    sessions: SessionManager,
    address: SessionAddress,
    call: Command,
    registry: CommandRegistry | None = None,
) -> str:
    """Run ``call`` in the session at ``address`` as its owner (an admin), outside the daemon."""
    registry = registry or _DEFAULT
    context = CommandContext(sessions, address, call.argument, True, LocalHost(), registry)
    return await registry.run(call, context)
