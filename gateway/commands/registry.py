"""The chat commands as one registry: what each is called, takes and does, and who may use it.

A message is a command when its text starts with ``/name`` (Telegram's syntax: up to 32 letters,
digits or underscores, then a space, ``@bot`` or the end); :func:`parse_call` reads it once,
whether or not the name is known. :class:`CommandRegistry` resolves the name: a known command
runs its handler, an unknown one is answered with :data:`UNKNOWN_TEXT` and never reaches the
model. The registry also writes ``/help`` and the platform menus (Telegram's ``setMyCommands``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from gateway.messages.command_call import Command, parse_call

if TYPE_CHECKING:
    from gateway.sessions.manager import SessionManager
    from gateway.sessions.runtime import SessionAddress

UNKNOWN_TEXT = "Unknown command /{name}; /help lists them."
ADMIN_ONLY_TEXT = "/{name} is for the bot's admins only."
HELP_HEADER = "Commands:"

Permission = Literal["everyone", "admin"]
"""Who may use a command: anyone allowed to talk to the bot, or its admins (``admin_users``)."""


class CommandHost(Protocol):
    """What the front end running a command offers it besides the sessions."""

    async def stop_running(self, session_key: str) -> bool:
        """Cancel the session's running turn; whether one was running."""

    async def health_text(self) -> str:
        """The daemon's own health for an admin (empty when there is none to tell)."""

    async def access_changed(self) -> None:
        """Run-time access decisions changed (``/allow``, ``/deny``): apply them now."""


@dataclass(frozen=True, slots=True)
class CommandContext:
    """Everything a handler gets: the session it runs in, its argument, who called it."""

    sessions: SessionManager
    address: SessionAddress
    argument: str
    is_admin: bool
    host: CommandHost
    registry: CommandRegistry


CommandHandler = Callable[[CommandContext], Awaitable[str]]
"""Runs a command; returns the text the user gets back."""


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One registered command."""

    name: str
    description: str
    """One line, for ``/help`` and the platform menus (Telegram allows 3-256 characters)."""
    handler: CommandHandler
    arguments: str = ""
    """How the argument is written in ``/help`` (``[focus]``); empty when it takes none."""
    permission: Permission = "everyone"
    aliases: tuple[str, ...] = ()
    immediate: bool = False
    """Runs at once beside the session's running turn (``/stop``) instead of after it."""

    @property
    def usage(self) -> str:
        """``/compress [focus]``."""
        return f"/{self.name} {self.arguments}".rstrip()


class CommandRegistry:
    """The commands a front end understands, by name and alias."""

    def __init__(self, specs: Iterable[CommandSpec] = ()) -> None:
        self._specs: dict[str, CommandSpec] = {}
        self._names: dict[str, CommandSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: CommandSpec) -> None:
        """Add a command; raises ValueError when its name or an alias is taken or malformed."""
        for name in (spec.name, *spec.aliases):
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise ValueError(f"command name {name!r}: use 1-32 of a-z, 0-9 and _")
            if name in self._names:
                raise ValueError(f"command /{name} is registered twice")
        self._specs[spec.name] = spec
        for name in (spec.name, *spec.aliases):
            self._names[name] = spec

    def resolve(self, call: Command) -> CommandSpec | None:
        """The command a call names (through aliases), None when unknown."""
        return self._names.get(call.name)

    def parse(self, text: str, bot_username: str | None = None) -> Command | None:
        """A call of a known command, by its registered name; None for anything else,
        including a Telegram group command addressed to another bot."""
        call = parse_call(text)
        spec = self.resolve(call) if call is not None else None
        if call is None or spec is None or not _for_bot(call, bot_username):
            return None
        return Command(spec.name, call.argument)

    def specs(self, *, admin: bool = True) -> list[CommandSpec]:
        """The commands in registration order (without the admins' ones unless ``admin``)."""
        return [s for s in self._specs.values() if admin or s.permission == "everyone"]

    def help_text(self, *, admin: bool) -> str:
        """``/help``: one line per command the caller may use."""
        lines = [f"{spec.usage} - {spec.description}" for spec in self.specs(admin=admin)]
        return "\n".join([HELP_HEADER, *lines])

    def menu(self) -> list[tuple[str, str]]:
        """(name, description) of the commands everyone may use, for a platform's menu."""
        return [(spec.name, spec.description) for spec in self.specs(admin=False)]

    async def run(self, call: Command, context: CommandContext) -> str:
        """Run a call's handler; unknown commands and refused permissions get a short answer."""
        spec = self.resolve(call)
        if spec is None:
            return UNKNOWN_TEXT.format(name=call.name)
        if spec.permission == "admin" and not context.is_admin:
            return ADMIN_ONLY_TEXT.format(name=spec.name)
        return await spec.handler(context)


def _for_bot(call: Command, bot_username: str | None) -> bool:
    return not (call.target and bot_username and call.target.lower() != bot_username.lower())
