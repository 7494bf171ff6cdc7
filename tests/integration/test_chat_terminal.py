"""``hermes chat`` at a real terminal (a pseudo-terminal): a pasted block of lines is one
message, Ctrl-C stops the answer in progress and the chat goes on, Ctrl-D quits."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import sys
import termios
from pathlib import Path

from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.conftest import ROOT, write_config

WAIT = 60.0
"""Guard against a hang, never a timing assertion."""
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[=>]|\r")
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
CTRL_C, CTRL_D = "\x03", "\x04"
PROMPT = "you>"  # the prompt's trailing space is a cursor move on a terminal


def _controlling_terminal() -> None:
    """In the child, after setsid: the pseudo-terminal on stdin becomes its terminal, so
    Ctrl-C typed there is a SIGINT, as at a real one."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``hermes chat`` on a pseudo-terminal: type into it, wait for what it shows."""

    def __init__(self, master: int, process: asyncio.subprocess.Process) -> None:
        self.master = master
        self.process = process
        self.screen = ""
        self.closed = False
        self._changed = asyncio.Condition()
        self._tasks: set[asyncio.Future[None]] = set()
        os.set_blocking(master, False)
        asyncio.get_running_loop().add_reader(master, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self.master, 4096)
        except BlockingIOError:
            return
        except OSError:  # the process closed the terminal
            chunk = b""
        if chunk:
            self.screen += ANSI.sub("", chunk.decode(errors="replace"))
        else:
            self.closed = True
            asyncio.get_running_loop().remove_reader(self.master)
        self._tasks.add(notify := asyncio.ensure_future(self._notify()))
        notify.add_done_callback(self._tasks.discard)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def shows(self, text: str, *, after: str | None = None) -> None:
        """Wait until ``text`` is on the screen (after the newest ``after``, when given)."""

        def shown() -> bool:
            start = self.screen.rfind(after) if after is not None else 0
            return start >= 0 and text in self.screen[start:]

        async with asyncio.timeout(WAIT), self._changed:
            await self._changed.wait_for(lambda: shown() or self.closed)
        assert shown(), f"not shown: {text!r}\n{self.screen}"

    async def exit_code(self) -> int:
        try:
            async with asyncio.timeout(WAIT):
                return await self.process.wait()
        except TimeoutError:
            raise AssertionError(f"still running:\n{self.screen}") from None

    def close(self) -> None:
        if not self.closed:
            asyncio.get_running_loop().remove_reader(self.master)
        os.close(self.master)
        if self.process.returncode is None:
            self.process.kill()


async def _chat(tmp_path: Path, emulator: AnthropicEmulator) -> Terminal:
    config = write_config(tmp_path, emulator.base_url)
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway.cli.main",
        "chat",
        "--config",
        str(config),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=str(ROOT),
        env=env,
        start_new_session=True,
        preexec_fn=_controlling_terminal,
    )
    os.close(slave)
    terminal = Terminal(master, process)
    await terminal.shows(PROMPT)
    return terminal


async def _slow_answer_begun(emulator: AnthropicEmulator) -> None:
    """Wait until the emulator took the injected slow fault (its answer is in progress)."""
    async with asyncio.timeout(WAIT):
        while emulator.pending_faults:  # noqa: ASYNC110 (the emulator has no event for it)
            await asyncio.sleep(0.01)


async def test_a_pasted_block_of_lines_is_one_message(tmp_path, emulator):
    terminal = await _chat(tmp_path, emulator)
    try:
        terminal.type(f"{PASTE_START}first line\nsecond line\nthird line{PASTE_END}\r")
        await terminal.shows(PROMPT, after="hermes> ")  # the answer, then the next prompt
        terminal.type(CTRL_D)
        assert await terminal.exit_code() == 0
    finally:
        terminal.close()
    [request] = emulator.requests
    assert request.last_user_text == "first line\nsecond line\nthird line"


async def test_ctrl_c_stops_the_answer_in_progress_and_the_chat_goes_on(tmp_path, emulator):
    emulator.inject_fault("slow", delay=WAIT * 2)
    terminal = await _chat(tmp_path, emulator)
    try:
        terminal.type("tell me a very long story\r")
        await _slow_answer_begun(emulator)
        terminal.type(CTRL_C)
        await terminal.shows(PROMPT, after="Stopped. The answer in progress was cancelled.")
        terminal.type("are you there?\r")
        await terminal.shows(PROMPT, after="Noted: are you there?")
        terminal.type(CTRL_C)  # at the prompt: quits
        assert await terminal.exit_code() == 0
    finally:
        terminal.close()
