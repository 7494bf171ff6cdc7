"""``hermes usage``: the cost table, then the tool calls per user and tool (or per tool), from
calls the model really made through ``hermes chat`` against the Anthropic emulator."""

from __future__ import annotations

from tests.integration.conftest import run_cli, write_config

GOOD_SUM = '[[tool:calculator {"expression": "6*7"}]] what is six times seven?'
BAD_SUM = '[[tool:calculator {"expression": ""}]] and this?'
TIME = "[[tool:current_time {}]] what time is it?"


def row(output: str, tool: str) -> list[str]:
    """The tool-call row of ``tool``: its name column, then the six numbers."""
    for line in output.split("tool calls per", 1)[1].splitlines():
        name, *numbers = line.rsplit(None, 6)
        if name.strip().endswith(f" {tool}") or name.strip() == tool:
            return [name.strip(), *numbers]
    raise AssertionError(f"no row for {tool} in:\n{output}")


async def test_hermes_usage_prints_tool_calls_per_user_and_tool_and_per_tool(tmp_path, emulator):
    config = write_config(tmp_path, emulator.base_url)
    chat = await run_cli(
        "chat", "--config", str(config), stdin=f"{GOOD_SUM}\n{BAD_SUM}\n{TIME}\n{GOOD_SUM}\n"
    )
    assert chat.code == 0, chat.stderr

    per_user = await run_cli("usage", "--config", str(config))
    assert per_user.code == 0, per_user.stderr
    assert "tool calls per user and tool" in per_user.stdout
    name, calls, errors, refused, cancelled, total, longest = row(per_user.stdout, "calculator")
    assert name == "(no user)  calculator", "the terminal's turns are billed to no user"
    assert (calls, errors, refused, cancelled) == ("3", "1", "0", "0")
    assert float(longest) <= float(total)
    assert "total: 4 tool call(s) over the last 30 day(s)" in per_user.stdout

    per_tool = await run_cli("usage", "--by", "model", "--config", str(config))
    assert per_tool.code == 0, per_tool.stderr
    assert "tool calls per tool " in per_tool.stdout
    assert row(per_tool.stdout, "calculator")[:3] == ["calculator", "3", "1"]
    assert row(per_tool.stdout, "current_time")[:3] == ["current_time", "1", "0"]
    assert "6*7" not in per_user.stdout + per_tool.stdout
