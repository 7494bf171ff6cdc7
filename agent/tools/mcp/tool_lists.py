"""Each MCP server's last tool list, kept in the store so a restart with a server down still
offers the same tools (names, order, schemas): the cached prefix survives the restart."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from agent.tools.mcp.spec import McpToolInfo

log = logging.getLogger(__name__)


class ToolListStore(Protocol):
    """Where the servers' tool lists are kept (the gateway's store implements it)."""

    async def load_mcp_tool_lists(self) -> dict[str, list[McpToolInfo]]:
        """Every server's last tool list, by server name."""

    async def save_mcp_tool_list(self, server: str, tools: Sequence[McpToolInfo]) -> None:
        """Replace the server's kept tool list."""


class ToolListKeeper:
    """The process's view of the kept tool lists.

    Servers start in parallel with the store, so a listing may come before the store is open:
    it is saved when the store is attached (:meth:`attach`)."""

    def __init__(self) -> None:
        self._store: ToolListStore | None = None
        self._stored: dict[str, list[McpToolInfo]] = {}
        self._unsaved: dict[str, list[McpToolInfo]] = {}

    def stored(self, server: str) -> list[McpToolInfo] | None:
        """The server's tool list as kept by a previous run (None: never kept)."""
        return self._stored.get(server)

    async def attach(self, store: ToolListStore) -> None:
        """Read the kept lists and keep every listing from now on (those made before too)."""
        self._stored = await store.load_mcp_tool_lists()
        self._store = store
        unsaved, self._unsaved = self._unsaved, {}
        for server, tools in unsaved.items():
            await self.listed(server, tools)

    async def listed(self, server: str, tools: Sequence[McpToolInfo]) -> None:
        """The server listed ``tools``: keep them (a store failure is logged, not raised: the
        server's tools are still offered for this run)."""
        if self._store is None:
            self._unsaved[server] = list(tools)
            return
        if self._stored.get(server) == list(tools):
            return
        try:
            await self._store.save_mcp_tool_list(server, tools)
        except Exception as exc:  # the store is down: this run still has the tools
            log.warning("could not keep the tool list of MCP server %s: %s", server, exc)
            return
        self._stored[server] = list(tools)
