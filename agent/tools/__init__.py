"""Tools the agent can call: a registry and a few safe built-ins."""

from agent.tools.builtins import build_registry
from agent.tools.registry import Tool, ToolError, ToolRegistry

__all__ = ["Tool", "ToolError", "ToolRegistry", "build_registry"]
