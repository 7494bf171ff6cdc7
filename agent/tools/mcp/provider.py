"""MCP servers as tool providers: each server's tools as ``<server>__<tool>``, listed once and
then kept (same names, order and schemas) whatever happens to the server, so the cached prefix
of every session survives a server's restart."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from agent.tools.mcp.connection import McpConnection, McpToolInfo
from agent.tools.mcp.names import model_tool_name
from agent.tools.mcp.results import ERROR_PREFIX, result_content
from agent.tools.mcp.spec import McpServerSpec
from agent.tools.mcp.tool_lists import ToolListKeeper
from agent.tools.registry import Tool, ToolContent
from agent.tools.result_images import ResultImages
from agent.tools.tool_schemas import input_schema_problem

log = logging.getLogger(__name__)

STARTUP_WAIT_SECONDS = 3.0
"""How long start-up waits for the servers' first listing (all in parallel); a slower server
joins when it is ready, its tools offered from then on."""


class McpToolProvider:
    """One server's tools (one provider per server per process); each session offers them
    through its own :meth:`for_session` view."""

    def __init__(self, connection: McpConnection) -> None:
        self.connection = connection
        self._source: list[McpToolInfo] | None = None
        self._offered: list[tuple[str, McpToolInfo]] = []
        self.left_out: dict[str, str] = {}
        """The server's tools no provider would take, by tool name, with why (warned once)."""

    @property
    def name(self) -> str:
        return self.connection.name

    def tools(self, images: ResultImages | None = None) -> Sequence[Tool]:
        """The tools of the server's newest listing (allow-list applied); the list kept by a
        previous run while the server has not listed yet; none before it ever listed. Their
        images reach the model through ``images`` (None: as placeholders)."""
        known = self.connection.known_tools()
        if known is not self._source:
            self._source = known
            self._offered = self._offerable(known or [])
        return [self._tool(name, info, images) for name, info in self._offered]

    def model_names(self) -> dict[str, str]:
        """The offered tools' model names, each with the server's name for the tool."""
        self.tools()
        return {name: info.name for name, info in self._offered}

    def _offerable(self, known: Sequence[McpToolInfo]) -> list[tuple[str, McpToolInfo]]:
        """The allowed tools with their model names; a tool whose schema a provider would
        refuse, or whose model name another tool has, is left out with one warning."""
        spec = self.connection.spec
        offered: dict[str, McpToolInfo] = {}
        for info in known:
            if not spec.offers(info.name):
                continue
            name = info.model_name or model_tool_name(self.name, info.name)
            problem = input_schema_problem(info.input_schema)
            if problem is None and name in offered:
                problem = f"its model name {name} is taken by {offered[name].name!r}"
            if problem is not None:
                self._leave_out(info.name, problem)
                continue
            offered[name] = info
        self._warn_unknown_entries([info.name for info in known])
        return list(offered.items())

    def _warn_unknown_entries(self, listed: list[str]) -> None:
        """One warning per listing for ``ask``/``tools`` entries naming no listed tool."""
        for key, names in self.connection.spec.unknown_entries(listed).items():
            effect = "; every call of the server asks first" if key == "ask" else ""
            log.warning(
                "MCP server %s: %s entries %s name no tool of the server%s",
                self.name,
                key,
                ", ".join(names),
                effect,
            )

    def _leave_out(self, tool: str, problem: str) -> None:
        if self.left_out.get(tool) != problem:
            log.warning("MCP server %s: tool %r left out: %s", self.name, tool, problem)
        self.left_out[tool] = problem

    def for_session(self, images: ResultImages | None = None) -> SessionTools:
        """The server's tools as one session offers them (see :class:`SessionTools`), their
        images shown through ``images``."""
        return SessionTools(self, images)

    def _tool(self, name: str, info: McpToolInfo, images: ResultImages | None) -> Tool:
        async def handler(args: dict[str, Any]) -> ToolContent:
            return await self._call(info.name, args, images)

        ask = self.connection.spec.asks(info.name, [t.name for t in self._source or []])
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
