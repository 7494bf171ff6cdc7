"""Counting tool calls: the outcome and run time each call is recorded with, and the short
chat report of the most called tools."""

from __future__ import annotations

import asyncio

import pytest

from agent.tools.call_log import ToolCallLog, refusal_outcome, result_outcome
from agent.types import ToolCallRecord
from gateway.reports.tool_calls import duration, period_lines
from gateway.store.repository_tool_calls import ToolCallStats


class Calls:
    """The recorder port, keeping what it is given."""

    def __init__(self) -> None:
        self.records: list[ToolCallRecord] = []

    async def record_tool_call(self, call: ToolCallRecord) -> None:
        self.records.append(call)


class Ticks:
    """A monotonic clock that advances one second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


async def answer(text: str) -> str:
    return text


def test_error_texts_and_refusals_have_their_outcomes() -> None:
    assert result_outcome("Error: missing 'expression'") == "error"
    assert result_outcome("6*7 = 42") == "ok"
    assert refusal_outcome("deny") == "denied"
    assert refusal_outcome("timeout") == "timeout"


async def test_a_run_is_timed_and_its_result_decides_the_outcome() -> None:
    sink = Calls()
    async with ToolCallLog(sink, "calculator", clock=Ticks()) as call:
        assert await call.run(answer("Error: bad")) == "Error: bad"
    assert sink.records == [ToolCallRecord("calculator", "error", 1.0)]


async def test_a_call_not_run_has_no_run_time() -> None:
    sink = Calls()
    async with ToolCallLog(sink, "notes__write") as call:
        call.not_run("denied", "The user denied this call; it was not run.")
    assert sink.records == [ToolCallRecord("notes__write", "denied", None)]


async def test_a_cancelled_run_is_recorded_as_cancelled_with_its_time_so_far() -> None:
    sink = Calls()
    started = asyncio.Event()

    async def slow() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async def call_tool() -> None:
        async with ToolCallLog(sink, "notes__slow", clock=Ticks()) as call:
            await call.run(slow())

    task = asyncio.create_task(call_tool())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sink.records == [ToolCallRecord("notes__slow", "cancelled", 1.0)]


async def test_a_recorder_failure_does_not_fail_the_call() -> None:
    class Broken:
        async def record_tool_call(self, call: ToolCallRecord) -> None:
            raise OSError("disk full")

    async with ToolCallLog(Broken(), "calculator") as call:
        result = await call.run(answer("6*7 = 42"))
    assert result == "6*7 = 42"


def test_the_chat_lists_the_most_called_tools_and_sums_the_rest() -> None:
    stats = [ToolCallStats(f"tool{n}", 10 - n, 0, 0, 0, 0.5, 0.25) for n in range(7)]
    lines = period_lines("today", stats, top=3)
    assert lines[0] == "  today: 49 calls, 3.50 s"
    assert [line.split(":")[0].strip() for line in lines[1:4]] == ["tool0", "tool1", "tool2"]
    assert lines[4] == "    +4 other tools: 22 calls"
    assert period_lines("today", []) == ["  today: none"]


def test_durations_read_in_milliseconds_below_a_second() -> None:
    assert duration(0.0349) == "35 ms"
    assert duration(2.5) == "2.50 s"
