"""The configured MCP servers for this process: their specs (secrets resolved from the
environment here, never read by the agent) and their connections, started at once."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent.tools.mcp import (
    STARTUP_WAIT_SECONDS,
    McpConnection,
    McpServerSpec,
    McpToolProvider,
    ToolListKeeper,
    start_servers,
)
from gateway.config.masking import mask_args, mask_url_secrets
from gateway.settings.mcp import HEADER_VARIABLE, McpServerSettings, McpSettings
from gateway.store.ports import McpToolListStore

log = logging.getLogger(__name__)


class MissingHeaderVariable(Exception):
    """A ``${VAR}`` of a server's headers is not set in the environment."""


def server_spec(
    name: str, settings: McpServerSettings, environ: Mapping[str, str] = os.environ
) -> McpServerSpec:
    """The agent's view of one server: ``env`` names and ``${VAR}`` filled from ``environ``.

    Raises :class:`MissingHeaderVariable` naming the variable (never a value)."""
    missing = [var for var in settings.env if var not in environ]
    if missing:
        log.warning("MCP server %s: %s not set; the server gets none", name, ", ".join(missing))
    return McpServerSpec(
        name=name,
        command=settings.command,
        args=tuple(settings.args),
        cwd=settings.cwd,
        env={var: environ[var] for var in settings.env if var in environ},
        url=settings.url,
        headers={h: _filled(name, v, environ) for h, v in settings.headers.items()},
        timeout_seconds=settings.timeout_seconds,
        startup_timeout_seconds=settings.startup_timeout_seconds,
        tools=tuple(settings.tools) if settings.tools is not None else None,
        ask=tuple(settings.ask),
        secrets=_literal_secrets(settings),
        admins_only=settings.users == "admins",
    )


def _literal_secrets(settings: McpServerSettings) -> tuple[str, ...]:
    """Secrets written into the file (a URL's password, a ``--token`` value), as ``hermes
    config check`` masks them: masked too in what the server prints."""
    found: set[str] = set()
    mask_args(settings.args, found)
    if settings.url is not None:
        mask_url_secrets(settings.url, found)
    return tuple(sorted(found))


def _filled(server: str, value: str, environ: Mapping[str, str]) -> str:
    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise MissingHeaderVariable(f"MCP server {server}: ${{{name}}} is not set")
        return environ[name]

    return HEADER_VARIABLE.sub(variable, value)


@dataclass(slots=True)
class McpServers:
    """The running connections and the tool providers sessions offer."""

    connections: list[McpConnection] = field(default_factory=list)
    providers: list[McpToolProvider] = field(default_factory=list)
    """One per server, shared by every session: each keeps its server's first tool list."""
    keeper: ToolListKeeper = field(default_factory=ToolListKeeper)
    """The servers' last tool lists, kept in the store once it is attached."""
    not_started: dict[str, str] = field(default_factory=dict)
    """Servers left unstarted, by name, with why (a ``${VAR}`` of their headers is not set)."""

    @classmethod
    async def start(
        cls,
        settings: McpSettings,
        environ: Mapping[str, str] = os.environ,
        *,
        wait_seconds: float = STARTUP_WAIT_SECONDS,
    ) -> McpServers:
        """Start every configured server in parallel; wait ``wait_seconds`` at most for their
        first listing (slower ones join when ready)."""
        specs: list[McpServerSpec] = []
        not_started: dict[str, str] = {}
        for name, server in settings.servers.items():
            try:
                specs.append(server_spec(name, server, environ))
            except MissingHeaderVariable as exc:
                log.warning("%s; the server is not started", exc)
                not_started[name] = str(exc)
        keeper = ToolListKeeper()
        connections = await start_servers(specs, wait_seconds, keeper)
        providers = [McpToolProvider(c) for c in connections]
        return cls(connections, providers, keeper, not_started)

    async def keep_tool_lists(self, store: McpToolListStore) -> None:
        """Keep every server's tool list in ``store``; a server that has not listed yet offers
        the list a previous run kept."""
        if self.connections:
            await self.keeper.attach(store)

    async def aclose(self) -> None:
        for connection in self.connections:
            await connection.aclose()


def server_state(connection: McpConnection, *, with_cause: bool = True) -> str:
    """A server's state in a few words (``ready``, ``could not start (cause)``, ...); the cause
    (a failure's type and message, never a secret) only ``with_cause``."""
    cause = f" ({connection.last_error})" if with_cause and connection.last_error else ""
    details = connection.failure_details() if with_cause and connection.state != "ready" else []
    if details and cause:  # the server's own last words (stderr), or its exit code
        cause = f"{cause[:-1]}; {details[-1]})"
    if connection.state == "ready":
        return "ready"
    if connection.state == "reconnecting" and connection.connections == 0:
        return f"could not start{cause}"
    if connection.state == "reconnecting":
        return f"reconnecting{cause}"
    return connection.state


def server_warnings(provider: McpToolProvider) -> list[str]:
    """What a user should fix about a server: tools left out of requests (a schema no provider
    takes) and ``ask``/``tools`` entries naming no tool the server listed (only once it has)."""
    warnings = [f"tool {tool!r} left out: {why}" for tool, why in provider.left_out.items()]
    listed = provider.connection.known_tools()
    if listed is not None:
        unknown = provider.connection.spec.unknown_entries([t.name for t in listed])
        for key, names in unknown.items():
            named = ", ".join(repr(n) for n in names)
            effect = " (every call asks first)" if key == "ask" else ""
            warnings.append(f"{key}: {named} names no tool of the server{effect}")
    return warnings


def servers_line(providers: Sequence[McpToolProvider], *, with_cause: bool) -> str:
    """One line for ``/status``: every server, its state and how many tools it offers."""
    states = [
        f"{p.name} {server_state(p.connection, with_cause=with_cause)}, {_tools(len(p.tools()))}"
        for p in providers
    ]
    return "MCP servers: " + "; ".join(states)


def _tools(count: int) -> str:
    """``1 tool``, ``2 tools``."""
    return "1 tool" if count == 1 else f"{count} tools"
