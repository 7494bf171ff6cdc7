"""What one connection attempt's transport saw: the connection lost (and why), a stdio
server's exit code, its last stderr lines and junk on its stdout. The owner task waits on
:attr:`TransportWatch.lost` beside its calls, so a dead server is noticed without a call."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import anyio

STDERR_TAIL_LINES = 5
"""How many of a server's last stderr lines are kept to show why it failed."""


@dataclass(eq=False)
class TransportWatch:
    """The transport's findings; secrets are masked before anything is kept."""

    lost: anyio.Event = field(default_factory=anyio.Event)
    """Set when the transport knows the server is gone (process exited, connection refused)."""
    cause: str | None = None
    """Why, in a few words (the first cause wins)."""
    exit_code: int | None = None
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    stdout_ended: bool = False
    """A stdio server closed its stdout (it is exiting, or has)."""
    junk_lines: int = 0
    """Lines on a stdio server's stdout that were not MCP messages (ignored)."""

    def fail(self, cause: str) -> None:
        """The server is gone because of ``cause``."""
        if self.cause is None:
            self.cause = cause
        self.lost.set()

    def exited(self, code: int) -> None:
        """The server's process exited with ``code``."""
        self.exit_code = code
        self.fail(f"the server exited with code {code}")

    def junk_note(self) -> list[str]:
        """The junk count as a line (none when the server printed no junk)."""
        if not self.junk_lines:
            return []
        return [f"{self.junk_lines} stdout lines were not MCP messages (ignored)"]

    def details(self) -> list[str]:
        """Lines for ``hermes mcp list`` and ``doctor``: exit code, junk count, stderr tail."""
        code = [f"exit code {self.exit_code}"] if self.exit_code is not None else []
        return code + self.junk_note() + [f"stderr: {line}" for line in self.stderr_tail]
