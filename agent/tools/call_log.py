"""Counting tool calls for the usage reports: how each call ended and how long the tool ran.

The loop wraps every call in a :class:`ToolCallLog`. Whatever path the call takes (refused at
the approval, run, cancelled by ``/stop``), one :class:`~agent.types.ToolCallRecord` reaches
the session's recorder when it ends. Only the tool's name, the outcome and the run time are
kept: never the arguments or the result (users' data).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Protocol

from agent.tools.approvals import Decision
from agent.tools.registry import ToolContent
from agent.types import ToolCallRecord, ToolOutcome, content_text

log = logging.getLogger(__name__)

ERROR_RESULT_PREFIX = "Error:"
"""A result starting with it is an error text (a tool's failure, as the model is told it)."""


class ToolCallSink(Protocol):
    """Where a finished call is recorded (the session's turn recorder)."""

    async def record_tool_call(self, call: ToolCallRecord) -> None:
        """Store one finished call."""


def result_outcome(result: ToolContent) -> ToolOutcome:
    """``error`` for an error text, else ``ok`` (a result of parts: by its text)."""
    text = result if isinstance(result, str) else content_text(result, image_marker=None)
    return "error" if text.startswith(ERROR_RESULT_PREFIX) else "ok"


def refusal_outcome(decision: Decision) -> ToolOutcome:
    """The outcome of a call whose approval was not given (``deny`` or ``timeout``)."""
    return "timeout" if decision == "timeout" else "denied"


class ToolCallLog:
    """One tool call, recorded once when its ``async with`` block ends.

    Inside the block the call either ends without running (:meth:`not_run`) or runs
    (:meth:`run`, which times the tool with a monotonic clock). Leaving the block by
    cancellation records ``cancelled``; by any other exception, ``error``.
    """

    def __init__(
        self, sink: ToolCallSink, tool: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._sink = sink
        self._tool = tool
        self._clock = clock
        self._outcome: ToolOutcome | None = None
        self._started: float | None = None
        self._run_seconds: float | None = None

    def not_run(self, outcome: ToolOutcome, result: str) -> str:
        """Note a call that ends without the tool running; returns ``result`` unchanged."""
        self._outcome = outcome
        return result

    async def run(self, call: Awaitable[ToolContent]) -> ToolContent:
        """Await the tool's run (``call``), timing it; its result says ``ok`` or ``error``."""
        self._started = self._clock()
        result = await call
        self._run_seconds = self._clock() - self._started
        self._outcome = result_outcome(result)
        return result

    async def __aenter__(self) -> ToolCallLog:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._started is not None and self._run_seconds is None:
            self._run_seconds = self._clock() - self._started
        if exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
            # /stop: the record is written even though the task is being cancelled.
            await asyncio.shield(self._record("cancelled"))
            return
        await self._record(self._outcome if exc_type is None and self._outcome else "error")

    async def _record(self, outcome: ToolOutcome) -> None:
        record = ToolCallRecord(self._tool, outcome, self._run_seconds)
        try:
            await self._sink.record_tool_call(record)
        except Exception as exc:  # a counter must not cost the user the tool's result
            log.warning("tool %s: call not recorded (%s)", self._tool, type(exc).__name__)
