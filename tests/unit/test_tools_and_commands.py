"""Built-in tools are safe; chat commands parse like users type them."""

from __future__ import annotations

import pytest

from agent.tools import ToolError, build_registry
from agent.tools.builtins import evaluate_expression
from gateway.commands import Command, parse_command


@pytest.mark.parametrize(
    ("expr", "value"), [("2 * (3 + 4) ** 2", 98), ("sqrt(16)", 4.0), ("7 // 2", 3), ("2^10", 1024)]
)
def test_calculator_evaluates_arithmetic(expr, value):
    assert evaluate_expression(expr) == value


@pytest.mark.parametrize(
    "expr", ["__import__('os').system('id')", "open('x')", "9 ** 9 ** 9", "1 / 0", "a + 1"]
)
def test_calculator_refuses_anything_but_arithmetic(expr):
    with pytest.raises(ToolError):
        evaluate_expression(expr)


async def test_registry_turns_tool_failures_into_text_for_the_model():
    registry = build_registry(["calculator", "current_time"])
    assert registry.names() == ["calculator", "current_time"]
    assert await registry.call("calculator", '{"expression": "6 * 7"}') == "6 * 7 = 42"
    assert (await registry.call("calculator", "{not json")).startswith(
        "Error: arguments are not valid JSON"
    )
    assert (await registry.call("nope", "{}")).startswith("Error: unknown tool 'nope'")
    assert (await registry.call("current_time", '{"timezone": "Mars/Base"}')).startswith(
        "Error: unknown time zone"
    )


def test_unknown_builtin_tool_in_config_is_an_error():
    with pytest.raises(ValueError, match="unknown tool 'shell'"):
        build_registry(["shell"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/compress the Lisbon trip", Command("compress", "the Lisbon trip")),
        ("/usage", Command("usage", "")),
        ("/new@hermes_test_bot", Command("new", "")),
        ("/start", Command("help", "")),
        ("/stop@other_bot", None),
        ("/unknown thing", None),
        ("hello /new", None),
    ],
)
def test_commands_parse_as_typed(text, expected):
    assert parse_command(text, bot_username="hermes_test_bot") == expected
