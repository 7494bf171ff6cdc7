"""``/tools``: the tools this chat is offered, the built-ins first, then by MCP server with
the server's state and which tools ask for the user's approval before each call."""

from __future__ import annotations

from agent.tools.mcp import McpToolProvider
from gateway.commands.registry import CommandContext, CommandSpec
from gateway.sessions.mcp_servers import server_state, server_warnings

NO_TOOLS_TEXT = "No tools are offered in this chat."
ASKS = " (asks first)"


async def tools_command(ctx: CommandContext) -> str:
    """List the session's tools: those of the request the model gets next, and each server's
    tools left out (a schema no provider takes) or config entries naming no tool."""
    runtime = await ctx.sessions.get(ctx.address)
    services = ctx.sessions.services
    offered = runtime.agent.tool_names()
    if not offered:
        return NO_TOOLS_TEXT
    mcp_names = {p.name: p.model_names() for p in services.tool_providers}
    from_servers = {name for names in mcp_names.values() for name in names}
    lines = ["Tools in this chat:"]
    builtins = [name for name in offered if name not in from_servers]
    if builtins:
        lines.append("built-in: " + ", ".join(builtins))
    for provider in services.tool_providers:
        names = mcp_names[provider.name]
        tools = [names[name] for name in offered if name in names]
        if tools:
            lines.append(_server_line(ctx, provider, tools))
        lines += [f"  warning: {w}" for w in server_warnings(provider)]
    return "\n".join(lines)


def _server_line(ctx: CommandContext, provider: McpToolProvider, tools: list[str]) -> str:
    listed = [t.name for t in provider.connection.known_tools() or []]
    spec = provider.connection.spec
    asks = [t + (ASKS if spec.asks(t, listed) else "") for t in tools]
    state = server_state(provider.connection, with_cause=ctx.is_admin)
    return f"{provider.name} ({state}): {', '.join(asks)}"


TOOLS_COMMAND = CommandSpec(
    "tools", "The tools this chat is offered, by server, and which ask first", tools_command
)
