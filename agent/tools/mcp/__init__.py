"""Tools from Model Context Protocol servers: one long-lived connection per server, its tools
offered as ``<server>__<tool>`` with a stable order and schemas whatever the server does."""

from agent.tools.mcp.connection import McpConnection, McpToolInfo
from agent.tools.mcp.provider import (
    STARTUP_WAIT_SECONDS,
    McpToolProvider,
    SessionTools,
    start_servers,
)
from agent.tools.mcp.results import result_text
from agent.tools.mcp.spec import McpServerSpec
from agent.tools.mcp.tool_lists import ToolListKeeper, ToolListStore

__all__ = [
    "STARTUP_WAIT_SECONDS",
    "McpConnection",
    "McpServerSpec",
    "McpToolInfo",
    "McpToolProvider",
    "SessionTools",
    "ToolListKeeper",
    "ToolListStore",
    "result_text",
    "start_servers",
]
