"""What the agent needs to reach one MCP server: plain values, secrets already resolved by the
host (the agent never reads the configuration or the environment itself)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

DEFAULT_CALL_TIMEOUT_SECONDS = 60.0
DEFAULT_STARTUP_TIMEOUT_SECONDS = 30.0
"""Time for a server to start, answer the handshake and list its tools (``npx`` and ``uvx``
servers take a few seconds from a warm cache)."""


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
    startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS
    """The handshake and first listing must end in this time, or the attempt failed."""
    tools: tuple[str, ...] | None = None
    """The server's tools offered to the model (None: all)."""
    ask: tuple[str, ...] = ()
    """The server's tools whose calls the user approves first (``"*"``: all)."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Other values to mask wherever the server's output is shown (a password in a URL among
    its ``args``, a ``--token`` value), as the host found them."""
    admins_only: bool = False
    """Offered only in sessions the host says are an admin's (``users: admins``)."""

    def offers(self, tool: str) -> bool:
        """Whether the allow-list lets ``tool`` through."""
        return self.tools is None or tool in self.tools

    def asks(self, tool: str, listed: Collection[str] | None = None) -> bool:
        """Whether a call to ``tool`` needs the user's approval. Given the server's ``listed``
        tools, an ``ask`` entry naming none of them (a typo, a renamed tool) makes every call
        ask: in doubt, ask."""
        if "*" in self.ask or tool in self.ask:
            return True
        return listed is not None and bool(self.unknown_entries(listed).get("ask"))

    def unknown_entries(self, listed: Collection[str]) -> dict[str, list[str]]:
        """The ``ask`` and ``tools`` entries that name none of the ``listed`` tools, by key
        (only keys with such entries)."""
        unknown = {
            "ask": [t for t in self.ask if t != "*" and t not in listed],
            "tools": [t for t in self.tools or () if t not in listed],
        }
        return {key: names for key, names in unknown.items() if names}


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """One tool as the server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    model_name: str = ""
    """The name the model calls it by (see :mod:`agent.tools.mcp.names`), kept with the list so
    it stays the same across restarts ("": not given yet)."""
