"""What the agent needs to reach one MCP server: plain values, secrets already resolved by the
host (the agent never reads the configuration or the environment itself)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_CALL_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One server: a stdio child (``command``) or a Streamable HTTP endpoint (``url``).

    ``env`` and ``headers`` hold secret values: never log them (``repr`` leaves them out).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict, repr=False)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_seconds: float = DEFAULT_CALL_TIMEOUT_SECONDS
    tools: tuple[str, ...] | None = None
    """The server's tools offered to the model (None: all)."""
    ask: tuple[str, ...] = ()
    """The server's tools whose calls the user approves first (``"*"``: all)."""
    admins_only: bool = False
    """Offered only in sessions the host says are an admin's (``users: admins``)."""

    def offers(self, tool: str) -> bool:
        """Whether the allow-list lets ``tool`` through."""
        return self.tools is None or tool in self.tools

    def asks(self, tool: str) -> bool:
        """Whether a call to ``tool`` needs the user's approval."""
        return "*" in self.ask or tool in self.ask


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """One tool as the server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]
