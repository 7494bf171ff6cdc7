"""The tool registry: what the model may call, and the hook context engines add tools through."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.tools.tool_schemas import tool_problem

log = logging.getLogger(__name__)

ToolContent = str | list[dict[str, Any]]
"""A tool's result: its text, or parts (text parts and image attachment parts, see
:mod:`agent.tools.result_images`) in the shape of a message's content."""
ToolHandler = Callable[[dict[str, Any]], Awaitable[ToolContent]]
ResultClip = Callable[[str, str], Awaitable[str]]
"""``(tool, result) -> text for the context``: keeps a large result whole elsewhere and gives
the context a part of it (see :mod:`agent.tools.tool_output`)."""

MAX_TOOL_RESULT_CHARS = 50_000
"""A single tool result longer than this is cut (with a note), so one call cannot flood context."""


class ToolError(Exception):
    """A tool failed in a way the model should be told about."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One callable tool: its schema (Anthropic form) and the coroutine that runs it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    ask: bool = False
    """Each call needs the user's approval first (``agent.tools.approvals``)."""
    pages_itself: bool = False
    """The tool sizes its own results (a context engine's tools page what they reopen): they
    are not clipped."""

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


class ToolProvider(Protocol):
    """A source of tools whose list may grow after the session started (an MCP server that
    connects later); a tool it once offered it keeps offering, so the cached prefix holds,
    until :meth:`refresh` (called only where the cache is cold anyway)."""

    def tools(self) -> Sequence[Tool]:
        """The provider's tools now."""

    def refresh(self) -> bool:
        """Take the source's newest tool list; returns whether it changed."""


class ToolRegistry:
    """Holds the tools offered to the model for one session: its own and its providers'."""

    def __init__(self, tools: list[Tool] | None = None, clip: ResultClip | None = None) -> None:
        self._clip = clip
        """Where results too large for the context go (None: they are cut, the rest lost)."""
        self._tools: dict[str, Tool] = {}
        self._providers: list[ToolProvider] = []
        self._refused: dict[str, str] = {}
        """Tools left out of requests, with why (each warned about once)."""
        for tool in tools or []:
            self.add(tool)

    def add_provider(self, provider: ToolProvider) -> None:
        """Offer ``provider``'s tools too (a name the registry has already is not replaced)."""
        self._providers.append(provider)

    def refresh(self) -> bool:
        """Take every provider's newest tool list (only at cold points: a changed list rewrites
        the whole cached prefix); returns whether any changed."""
        changed = [provider.refresh() for provider in self._providers]
        return any(changed)

    def _all(self) -> dict[str, Tool]:
        if not self._providers:
            return self._tools
        tools = {t.name: t for p in self._providers for t in p.tools()}
        tools.update(self._tools)
        return tools

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def add_engine_tools(
        self, schemas: list[dict[str, Any]], call: Callable[[str, dict[str, Any]], Awaitable[str]]
    ) -> None:
        """Add a context engine's own tools; their calls are routed to the engine."""
        for schema in schemas:
            name = schema["name"]

            async def handler(args: dict[str, Any], _name: str = name) -> str:
                return await call(_name, args)

            self.add(
                Tool(
                    name,
                    schema.get("description", ""),
                    schema.get("input_schema", {"type": "object"}),
                    handler,
                    pages_itself=True,
                )
            )

    def schemas(self) -> list[dict[str, Any]]:
        """Tool schemas in a stable order (a stable tool list keeps the prompt cache warm).

        The request is checked here, where it is built: a tool no provider would take is left
        out (one warning per tool), so no tool can make the request invalid."""
        tools = self._all()
        schemas = []
        for name in sorted(tools):
            schema = tools[name].schema()
            problem = tool_problem(schema)
            if problem is None:
                schemas.append(schema)
            elif self._refused.get(name) != problem:
                self._refused[name] = problem
                log.warning("tool %r left out of the request: %s", name, problem)
        return schemas

    def names(self) -> list[str]:
        return sorted(self._all())

    def needs_approval(self, name: str) -> bool:
        """Whether a call to ``name`` must be approved by the user before it runs."""
        tool = self._all().get(name)
        return tool is not None and tool.ask

    async def call(self, name: str, arguments: str | dict[str, Any] | None) -> ToolContent:
        """Run a tool; any failure becomes an error text for the model, never an exception.

        A result too large for the context is clipped (see ``clip``); a result of parts has its
        text clipped as one text, given first, and keeps its images after it."""
        tool = self._all().get(name)
        if tool is None:
            return f"Error: unknown tool {name!r}. Available: {', '.join(self.names()) or 'none'}."
        try:
            args = parse_arguments(arguments)
            result = await tool.handler(args)
        except (ToolError, ValueError, TypeError, KeyError) as exc:
            return f"Error: {exc}"
        except Exception as exc:  # a tool bug must not kill the turn; the model is told
            log.exception("tool %s failed", name)
            return f"Error: tool {name} failed ({type(exc).__name__})"
        if tool.pages_itself:
            return result
        if isinstance(result, list):
            return await self._fitted_parts(name, result)
        return await self._fitted(name, result)

    async def _fitted_parts(self, name: str, parts: list[dict[str, Any]]) -> ToolContent:
        images = [part for part in parts if part.get("type") != "text"]
        text = "\n".join(str(part.get("text", "")) for part in parts if part.get("type") == "text")
        if not images:
            return await self._fitted(name, text)
        fitted = await self._fitted(name, text) if text else ""
        return [{"type": "text", "text": fitted}, *images] if fitted else images

    async def _fitted(self, name: str, result: str) -> str:
        """``result`` as the context takes it: clipped when too large."""
        if self._clip is not None:
            try:
                return await self._clip(name, result)
            except Exception as exc:  # the store failed: cut the result as without one
                log.warning("tool %s: its large result could not be kept (%s)", name, exc)
        if len(result) > MAX_TOOL_RESULT_CHARS:
            cut = len(result) - MAX_TOOL_RESULT_CHARS
            result = result[:MAX_TOOL_RESULT_CHARS] + f"\n[... {cut} more characters cut]"
        return result


def parse_arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON ({exc.msg})") from None
    if not isinstance(parsed, dict):
        raise ValueError("arguments must be a JSON object")
    return parsed
