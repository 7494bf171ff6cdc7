"""Safe built-in tools: the current time and a calculator (no eval, no I/O)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent.tools.registry import ResultClip, Tool, ToolError, ToolRegistry
from agent.tools.web import WebToolSettings, web_tools

MAX_EXPONENT = 1_000
MAX_EXPRESSION_CHARS = 500


async def current_time(args: dict[str, Any]) -> str:
    """The current date and time, in UTC or the IANA time zone asked for."""
    zone_name = str(args.get("timezone") or "UTC")
    try:
        zone = UTC if zone_name.upper() == "UTC" else ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"unknown time zone {zone_name!r}") from None
    now = datetime.now(zone)
    return now.strftime(f"%Y-%m-%d %H:%M:%S ({zone_name}, %A)")


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def evaluate_expression(expression: str) -> float | int:
    """Evaluate arithmetic safely by walking the syntax tree (numbers, + - * / // % **, a few
    math functions); anything else is a :class:`ToolError`."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError("expression is too long")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError:
        raise ToolError(f"cannot parse {expression!r}") from None
    return _eval(tree.body)


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolError("exponent too large")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        try:
            return _FUNCTIONS[node.func.id](*[_eval(a) for a in node.args])
        except (ValueError, TypeError) as exc:
            raise ToolError(f"{node.func.id}: {exc}") from None
    raise ToolError("only numbers, arithmetic operators and basic math functions are allowed")


async def calculator(args: dict[str, Any]) -> str:
    """Evaluate an arithmetic expression."""
    expression = str(args.get("expression", "")).strip()
    if not expression:
        raise ToolError("missing 'expression'")
    return f"{expression} = {evaluate_expression(expression)}"


BUILTIN_TOOLS: dict[str, Tool] = {
    "current_time": Tool(
        "current_time",
        "Get the current date and time. Optional IANA time zone, e.g. Europe/Paris.",
        {"type": "object", "properties": {"timezone": {"type": "string"}}},
        current_time,
    ),
    "calculator": Tool(
        "calculator",
        "Evaluate an arithmetic expression, e.g. '2 * (3 + 4) ** 2' or 'sqrt(2)'.",
        {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
        calculator,
    ),
}


def build_registry(
    names: list[str], web: WebToolSettings | None = None, clip: ResultClip | None = None
) -> ToolRegistry:
    """A registry with the named built-in tools (the web tools bound to ``web``, by default
    public addresses only and no search provider); an unknown name is a ValueError. ``clip``
    takes results too large for the context (see :class:`ToolRegistry`)."""
    available = {**BUILTIN_TOOLS, **web_tools(web or WebToolSettings())}
    registry = ToolRegistry(clip=clip)
    for name in names:
        if name not in available:
            raise ValueError(f"unknown tool {name!r} (built-ins: {', '.join(sorted(available))})")
        registry.add(available[name])
    return registry
