"""MCP servers as tool providers: each server's tools as ``<server>__<tool>``, listed once and
then kept (same names, order and schemas) whatever happens to the server, so the cached prefix
of every session survives a server's restart."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from agent.tools.mcp.connection import McpConnection, McpToolInfo
from agent.tools.mcp.results import ERROR_PREFIX, result_content
from agent.tools.mcp.spec import McpServerSpec
from agent.tools.mcp.tool_lists import ToolListKeeper
from agent.tools.registry import Tool, ToolContent
from agent.tools.result_images import ResultImages

log = logging.getLogger(__name__)

TOOL_NAME_SEPARATOR = "__"
STARTUP_WAIT_SECONDS = 3.0
"""How long start-up waits for the servers' first listing (all in parallel); a slower server
joins when it is ready, its tools offered from then on."""


def model_tool_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by."""
    return f"{server}{TOOL_NAME_SEPARATOR}{tool}"


class McpToolProvider:
    """One server's tools (one provider per server per process); each session offers them
    through its own :meth:`for_session` view."""

    def __init__(self, connection: McpConnection) -> None:
        self.connection = connection
        self._source: list[McpToolInfo] | None = None
        self._offered: list[McpToolInfo] = []

    @property
    def name(self) -> str:
        return self.connection.name

    def tools(self, images: ResultImages | None = None) -> Sequence[Tool]:
        """The tools of the server's newest listing (allow-list applied); the list kept by a
        previous run while the server has not listed yet; none before it ever listed. Their
        images reach the model through ``images`` (None: as placeholders)."""
        known = self.connection.known_tools()
        if known is not self._source:
            spec = self.connection.spec
            self._source = known
            self._offered = [info for info in known or [] if spec.offers(info.name)]
        return [self._tool(info, images) for info in self._offered]

    def for_session(self, images: ResultImages | None = None) -> SessionTools:
        """The server's tools as one session offers them (see :class:`SessionTools`), their
        images shown through ``images``."""
        return SessionTools(self, images)

    def _tool(self, info: McpToolInfo, images: ResultImages | None) -> Tool:
        async def handler(args: dict[str, Any]) -> ToolContent:
            return await self._call(info.name, args, images)

        name = model_tool_name(self.name, info.name)
        ask = self.connection.spec.asks(info.name)
        return Tool(name, info.description, info.input_schema, handler, ask=ask)

    async def _call(
        self, tool: str, args: dict[str, Any], images: ResultImages | None
    ) -> ToolContent:
        listed = self.connection.tools or []
        if self.connection.state == "ready" and all(t.name != tool for t in listed):
            return f"{ERROR_PREFIX}the {self.name} server no longer offers {tool}"
        result = await self.connection.call(tool, args)
        return result if isinstance(result, str) else result_content(result, images)


class SessionTools:
    """A server's tools as one session offers them: the list taken at the session's last cold
    point (start, a visit after the cache expired, a compaction), so a ``tools/list_changed``
    never rewrites the cached prefix mid-visit. A tool the server removed stays listed until
    then and its calls return an error text; a server that had never listed joins at once."""

    def __init__(self, provider: McpToolProvider, images: ResultImages | None = None) -> None:
        self._provider = provider
        self._images = images
        self._tools = list(provider.tools(images))

    def tools(self) -> Sequence[Tool]:
        if not self._tools:
            self._tools = list(self._provider.tools(self._images))
        return self._tools

    def refresh(self) -> bool:
        newest = list(self._provider.tools(self._images))
        changed = [t.schema() for t in newest] != [t.schema() for t in self._tools]
        self._tools = newest
        return changed


async def start_servers(
    specs: Sequence[McpServerSpec],
    wait_seconds: float = STARTUP_WAIT_SECONDS,
    keeper: ToolListKeeper | None = None,
) -> list[McpConnection]:
    """Start every server's connection at once and wait (at most ``wait_seconds``) for their
    first listing; servers not ready by then keep connecting in the background. ``keeper``
    keeps their tool lists across restarts."""
    keeper = keeper if keeper is not None else ToolListKeeper()
    connections = [McpConnection(spec, keeper) for spec in specs]
    for connection in connections:
        connection.start()
    if connections:
        waits = [asyncio.create_task(c.listed.wait()) for c in connections]
        _done, pending = await asyncio.wait(waits, timeout=wait_seconds)
        for wait in pending:
            wait.cancel()
        for connection in connections:
            if not connection.listed.is_set():
                log.warning("MCP server %s still starting; tools join when ready", connection.name)
    return connections
