"""``hermes chat``: the agent and store in a terminal.

Interactive on a terminal; when standard input is not a terminal it reads one message or
command per line and exits at the end of input, so conversations can be scripted.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TextIO

from gateway.app import App
from gateway.commands import CommandRegistry, default_registry, parse_call, run_local
from gateway.session_runtime import SessionAddress, TurnReply

PROMPT = "you> "
REPLY_PREFIX = "hermes> "
NOTICE_PREFIX = "notice> "


def cli_address(name: str) -> SessionAddress:
    """The session address of a terminal chat named ``name``."""
    return SessionAddress(key=f"cli:{name}", platform="cli", chat_id=name)


async def _read_line(stream: TextIO, interactive: bool) -> str | None:
    if interactive:
        try:
            return await asyncio.to_thread(input, PROMPT)
        except EOFError:
            return None
    line = await asyncio.to_thread(stream.readline)
    return line if line else None


def _print_reply(reply: TurnReply, out: TextIO) -> None:
    for notice in reply.notices:
        print(NOTICE_PREFIX + notice, file=out)
    print(REPLY_PREFIX + reply.text, file=out, flush=True)


async def run_chat(
    app: App,
    session_name: str,
    stream: TextIO | None = None,
    out: TextIO | None = None,
    commands: CommandRegistry | None = None,
) -> int:
    """Run the chat until end of input; returns the exit code.

    Commands (known or not) are answered by the registry and never reach the model; the
    person at the terminal owns the bot, so admin commands are theirs too."""
    stream = stream or sys.stdin
    registry = commands or default_registry()
    out = out or sys.stdout
    interactive = stream.isatty()
    address = cli_address(session_name)
    runtime = await app.sessions.get(address)
    # Ready: the SDK import now runs while the user types (not during start-up, whose Python
    # it would slow down by sharing the interpreter lock).
    app.services.provider.warm_up()
    if interactive:
        print(app.services.caching_line, file=out)
        print(f"Session #{runtime.session_id}. Type /help for commands, Ctrl-D to quit.", file=out)
    while True:
        line = await _read_line(stream, interactive)
        if line is None:
            return 0
        text = line.rstrip("\n")
        if not text.strip():
            continue
        command = parse_call(text)
        if command is not None:
            answer = await run_local(app.sessions, address, command, registry)
            print(REPLY_PREFIX + answer, file=out, flush=True)
            continue
        # The terminal is its own platform: its message time is when the line was read.
        reply = await app.sessions.run_turn(address, text, sent_at=time.time())
        _print_reply(reply, out)
