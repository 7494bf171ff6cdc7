"""``/tools``: the tools this chat is offered, the built-ins first, then by MCP server with
the server's state and which tools ask for the user's approval before each call."""

from __future__ import annotations

from gateway.commands.registry import CommandContext, CommandSpec
from gateway.sessions.mcp_servers import server_state
from gateway.settings.mcp import McpServerSettings

NO_TOOLS_TEXT = "No tools are offered in this chat."
ASKS = " (asks first)"


def _asks(settings: McpServerSettings | None, tool: str) -> bool:
    return settings is not None and ("*" in settings.ask or tool in settings.ask)


async def tools_command(ctx: CommandContext) -> str:
    """List the session's tools: those of the request the model gets next."""
    runtime = await ctx.sessions.get(ctx.address)
    services = ctx.sessions.services
    offered = runtime.agent.tool_names()
    if not offered:
        return NO_TOOLS_TEXT
    servers = {p.name: p for p in services.tool_providers}
    by_server: dict[str, list[str]] = {}
    builtins: list[str] = []
    for name in offered:
        server, sep, tool = name.partition("__")
        if sep and server in servers:
            by_server.setdefault(server, []).append(tool)
        else:
            builtins.append(name)
    lines = ["Tools in this chat:"]
    if builtins:
        lines.append("built-in: " + ", ".join(builtins))
    for server, tools in by_server.items():
        settings = services.config.mcp.servers.get(server)
        state = server_state(servers[server].connection, with_cause=ctx.is_admin)
        listed = ", ".join(t + (ASKS if _asks(settings, t) else "") for t in tools)
        lines.append(f"{server} ({state}): {listed}")
    return "\n".join(lines)


TOOLS_COMMAND = CommandSpec(
    "tools", "The tools this chat is offered, by server, and which ask first", tools_command
)
