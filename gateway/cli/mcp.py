"""``hermes mcp list`` and the doctor's MCP checks: every configured server started once, as
the daemon would, and reported with its state, tool count and last error."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.cli.doctor_probes import OK, WARN
from gateway.config.schema import Config
from gateway.sessions.mcp_servers import McpServers, server_state


@dataclass(frozen=True, slots=True)
class ServerReport:
    """One server as a start-up found it."""

    name: str
    transport: str
    state: str
    tools: int
    last_error: str | None

    @property
    def ready(self) -> bool:
        return self.state == "ready"


async def probe_servers(config: Config) -> list[ServerReport]:
    """Start every configured server (a few seconds at most, in parallel), note how each is,
    and stop them."""
    servers = await McpServers.start(config.mcp)
    try:
        providers = {p.name: p for p in servers.providers}
        reports = []
        for name, settings in config.mcp.servers.items():
            provider = providers.get(name)
            if provider is None:
                cause = servers.not_started.get(name)
                reports.append(ServerReport(name, settings.transport, "not started", 0, cause))
                continue
            connection = provider.connection
            state = server_state(connection, with_cause=False)
            tools = len(provider.tools())
            reports.append(
                ServerReport(name, settings.transport, state, tools, connection.last_error)
            )
        return reports
    finally:
        await servers.aclose()


async def run_mcp_list(config: Config) -> int:
    """Print one line per server: name, transport, state, tool count, last error."""
    if not config.mcp.servers:
        print("no MCP servers configured (mcp.servers)")
        return 0
    for r in await probe_servers(config):
        error = r.last_error or "-"
        print(f"{r.name:<16} {r.transport:<5} {r.state:<15} {r.tools:>3} tools  {error}")
    return 0


async def mcp_checks(config: Config) -> list[tuple[str, str]]:
    """The doctor's lines: a server that could not start is a warning (the bot answers
    without its tools)."""
    checks: list[tuple[str, str]] = []
    for r in await probe_servers(config) if config.mcp.servers else []:
        if r.ready:
            checks.append((OK, f"MCP server {r.name}: ready, {r.tools} tools"))
        else:
            cause = f": {r.last_error}" if r.last_error else ""
            checks.append(
                (WARN, f"MCP server {r.name}: {r.state}{cause} (the bot answers without it)")
            )
    return checks
