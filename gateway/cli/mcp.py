"""``hermes mcp list`` and the doctor's MCP checks: every configured server started once, as
the daemon would, and reported with its state, tool count, last error and warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.cli.doctor_probes import OK, WARN
from gateway.config.schema import Config
from gateway.sessions.mcp_servers import McpServers, server_state, server_warnings

PROBE_MARGIN_SECONDS = 1.0
"""Beyond the longest handshake timeout: a failed attempt's stderr is drained by then."""


@dataclass(frozen=True, slots=True)
class ServerReport:
    """One server as a start-up found it."""

    name: str
    transport: str
    state: str
    tools: int
    last_error: str | None
    warnings: list[str] = field(default_factory=list)
    """Tools left out of requests, config entries naming no tool."""
    details: list[str] = field(default_factory=list)
    """Why it failed beyond the cause: exit code, its last stderr lines (secrets masked)."""

    @property
    def ready(self) -> bool:
        """Whether the server answered and listed its tools."""
        return self.state == "ready"


async def probe_servers(config: Config) -> list[ServerReport]:
    """Start every configured server (in parallel), wait for each one's first attempt to end
    (its handshake timeout at most), note how each is, and stop them."""
    handshakes = [s.startup_timeout_seconds for s in config.mcp.servers.values()]
    wait = max(handshakes, default=0.0) + PROBE_MARGIN_SECONDS
    servers = await McpServers.start(config.mcp, wait_seconds=wait)
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
            reports.append(
                ServerReport(
                    name,
                    settings.transport,
                    server_state(connection, with_cause=False),
                    len(provider.tools()),
                    connection.last_error,
                    server_warnings(provider),
                    connection.failure_details(),
                )
            )
        return reports
    finally:
        await servers.aclose()


def _tool_word(count: int) -> str:
    """``tool`` for one, ``tools`` otherwise (padded: the columns stay aligned)."""
    return "tool " if count == 1 else "tools"


async def run_mcp_list(config: Config) -> int:
    """Print one line per server (name, transport, state, tool count, last error), then its
    failure details and warnings indented below it."""
    if not config.mcp.servers:
        print("no MCP servers configured (mcp.servers)")
        return 0
    for r in await probe_servers(config):
        count = f"{r.tools:>3} {_tool_word(r.tools)}"
        print(f"{r.name:<16} {r.transport:<5} {r.state:<15} {count}  {r.last_error or '-'}")
        for line in r.details:
            print(f"    {line}")
        for warning in r.warnings:
            print(f"    warning: {warning}")
    return 0


async def mcp_checks(config: Config) -> list[tuple[str, str]]:
    """The doctor's lines: a server that could not start is a warning (the bot answers
    without its tools), and so is each of its config warnings."""
    checks: list[tuple[str, str]] = []
    for r in await probe_servers(config) if config.mcp.servers else []:
        if r.ready:
            checks.append(
                (OK, f"MCP server {r.name}: ready, {r.tools} {_tool_word(r.tools).strip()}")
            )
        else:
            cause = f": {r.last_error}" if r.last_error else ""
            details = f" [{'; '.join(r.details)}]" if r.details else ""
            checks.append(
                (
                    WARN,
                    f"MCP server {r.name}: {r.state}{cause}{details} (the bot answers without it)",
                )
            )
        checks += [(WARN, f"MCP server {r.name}: {w}") for w in r.warnings]
    return checks
