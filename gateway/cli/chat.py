"""``hermes chat``: the agent and store in a terminal.

Interactive on a terminal, like a good REPL (prompt_toolkit): line editing, history kept in
``$HERMES_HOME/chat_history``, a pasted block of lines sent as one message; Ctrl-C interrupts
the running turn as ``/stop`` does, and Ctrl-C or Ctrl-D at the prompt quits. When standard
input is not a terminal it reads one message or command per line and exits at the end of
input, so conversations can be scripted.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from agent.reply_stream import ReplyObserver
from agent.tools.approvals import ApprovalPort
from gateway.cli.chat_approvals import TerminalApprovals
from gateway.cli.chat_stream import TerminalPrinter
from gateway.commands import CommandRegistry, default_registry, parse_call, run_local
from gateway.commands.builtin import STOPPED_TEXT
from gateway.config.schema import hermes_home
from gateway.runtime.app import App
from gateway.sessions.runtime import SessionAddress, TurnReply

PROMPT = "you> "
REPLY_PREFIX = "hermes> "
NOTICE_PREFIX = "notice> "
HISTORY_FILE = "chat_history"
"""Lines typed in ``hermes chat``, under ``$HERMES_HOME`` (arrow-up recalls them)."""


def cli_address(name: str) -> SessionAddress:
    """The session address of a terminal chat named ``name``."""
    # The terminal's user runs the daemon's configuration: an admin.
    return SessionAddress(key=f"cli:{name}", platform="cli", chat_id=name, is_admin=True)


class TerminalInput:
    """What the person at the terminal types: editable lines with history; a paste (the
    terminal's bracketed paste) arrives whole, newlines included, as one message."""

    def __init__(self, history_file: Path) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        history_file.parent.mkdir(parents=True, exist_ok=True)
        self._session: Any = PromptSession(history=FileHistory(str(history_file)))

    async def read(self) -> str | None:
        """The next message; None when the person quits (Ctrl-D, or Ctrl-C at the prompt)."""
        try:
            text: str = await self._session.prompt_async(PROMPT)
        except (EOFError, KeyboardInterrupt):
            return None
        return text

    async def ask(self, question: str) -> str | None:
        """One answer to ``question`` (kept out of the history); None on Ctrl-D or Ctrl-C."""
        from prompt_toolkit import PromptSession

        try:
            answer: str = await PromptSession().prompt_async(question)
        except (EOFError, KeyboardInterrupt):
            return None
        return answer


class ScriptLines:
    """A script's input lines, read one at a time in a thread. A read abandoned midway (an
    approval prompt that timed out) is not lost: the line it reads is the next one given."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._pending: asyncio.Future[str] | None = None

    async def next(self) -> str | None:
        """The next line (with its newline); None at the end of input."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(asyncio.to_thread(self._stream.readline))
        line = await asyncio.shield(self._pending)
        self._pending = None
        return line if line else None


async def _interruptible_turn(
    app: App,
    address: SessionAddress,
    text: str,
    observer: ReplyObserver,
    approvals: ApprovalPort,
) -> TurnReply | None:
    """One turn that Ctrl-C (SIGINT) interrupts as ``/stop`` does: the context is reloaded
    from the store and the unanswered message gets the stop note. None when interrupted.
    ``observer`` prints the answer as the model writes it."""
    loop = asyncio.get_running_loop()
    turn = asyncio.ensure_future(
        app.sessions.run_turn(
            address, text, sent_at=time.time(), observer=observer, approvals=approvals
        )
    )
    loop.add_signal_handler(signal.SIGINT, turn.cancel)
    try:
        return await turn
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not turn.cancelled() or (current is not None and current.cancelling()):
            raise  # this chat itself is being cancelled, not just the turn
        runtime = await app.sessions.get(address)
        await runtime.agent.after_stop()
        return None
    finally:
        loop.remove_signal_handler(signal.SIGINT)


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
    terminal: TerminalInput | None = None
    if interactive:
        terminal = TerminalInput(hermes_home() / HISTORY_FILE)
        print(app.services.caching_line, file=out)
        print(
            f"Session #{runtime.session_id}. Type /help for commands; Ctrl-C stops an answer, "
            "Ctrl-D quits.",
            file=out,
        )
    script = ScriptLines(stream)
    approvals = _approvals(app, session_name, script, out, terminal)
    while True:
        line = await (terminal.read() if terminal else script.next())
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
        if terminal is None:
            reply = await app.sessions.run_turn(
                address, text, sent_at=time.time(), approvals=approvals
            )
        else:
            printer = TerminalPrinter(out, REPLY_PREFIX)
            interrupted = await _interruptible_turn(app, address, text, printer, approvals)
            if interrupted is None:
                printer.finish("")
                print(REPLY_PREFIX + STOPPED_TEXT, file=out, flush=True)
                continue
            reply = interrupted
            if printer.finish(reply.text):
                for notice in reply.notices:
                    print(NOTICE_PREFIX + notice, file=out, flush=True)
                continue
        _print_reply(reply, out)


def _approvals(
    app: App, session_name: str, script: ScriptLines, out: TextIO, terminal: TerminalInput | None
) -> TerminalApprovals:
    """The chat's ``y/n/a`` prompt: at the terminal, or the script's next line."""

    async def scripted(question: str) -> str | None:
        print(question, end="", file=out, flush=True)
        answer = await script.next()
        print((answer or "").rstrip("\n"), file=out, flush=True)  # as a terminal echoes it
        return answer

    timeout = app.config.mcp.approval_timeout_seconds
    read_line = terminal.ask if terminal is not None else scripted
    return TerminalApprovals(app.repo, session_name, read_line, out, timeout)
