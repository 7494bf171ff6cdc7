"""Tools the agent can call: a registry and a few safe built-ins."""

from agent.tools.builtins import build_registry
from agent.tools.registry import Tool, ToolError, ToolProvider, ToolRegistry

__all__ = ["Tool", "ToolError", "ToolProvider", "ToolRegistry", "build_registry"]
