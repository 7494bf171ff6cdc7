"""Tools the agent can call: a registry and a few safe built-ins."""

from agent.tools.registry import Tool, ToolError, ToolRegistry, build_registry

__all__ = ["Tool", "ToolError", "ToolRegistry", "build_registry"]
