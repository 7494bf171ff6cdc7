"""Tool calls: one row per call the agent made, summed per tool (and per user) for ``/usage``
and ``hermes usage``.

A row keeps whose turn made the call, the tool's name, when it started, how long the tool
ran and how it ended; never the call's arguments or its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, case, func, insert, select

from agent.types import ToolCallRecord
from gateway.store.repository_base import RepositoryBase
from gateway.store.repository_users import NO_USER
from gateway.store.tables import ToolCallRow

tool_calls_table = cast(Table, ToolCallRow.__table__)

REFUSED_OUTCOMES = ("denied", "timeout", "not_asked")
"""Calls that never ran because their approval was not given (or could not be asked)."""


@dataclass(frozen=True, slots=True)
class ToolCallStats:
    """One tool's calls (of one user, or of everyone) since a point in time."""

    tool: str
    calls: int
    errors: int
    refused: int
    """Denied, unanswered or unaskable approvals (the tool did not run)."""
    cancelled: int
    run_seconds: float
    """The tool's total run time."""
    longest_seconds: float
    user: str | None = None
    """``platform:user_id`` when summed per user (``(no user)`` for calls of no one's turn)."""


class ToolCallQueries(RepositoryBase):
    """Recording tool calls and summing them per tool."""

    async def record_tool_call(
        self,
        session_id: int | None,
        call: ToolCallRecord,
        *,
        started_at: datetime,
        user_key: str | None = None,
    ) -> None:
        """Store one finished call (``user_key``: the user whose turn made it)."""
        row = {
            "session_id": session_id,
            "user_key": user_key,
            "tool": call.tool,
            "started_at": started_at,
            "run_seconds": call.run_seconds,
            "outcome": call.outcome,
        }

        def insert_call(connection: Connection) -> None:
            connection.execute(insert(tool_calls_table), row)

        await self._write(insert_call)

    async def tool_call_stats(
        self, since: datetime, user_key: str | None = None, *, per_user: bool = False
    ) -> list[ToolCallStats]:
        """Calls started since ``since`` per tool (per user and tool with ``per_user``), of
        one user or of everyone; the most called first."""
        user = func.coalesce(ToolCallRow.user_key, NO_USER)
        calls = func.count(ToolCallRow.id)
        groups: list[Any] = [user, ToolCallRow.tool] if per_user else [ToolCallRow.tool]
        query = (
            select(
                *groups,
                calls,
                _count_where(ToolCallRow.outcome == "error"),
                _count_where(ToolCallRow.outcome.in_(REFUSED_OUTCOMES)),
                _count_where(ToolCallRow.outcome == "cancelled"),
                func.coalesce(func.sum(ToolCallRow.run_seconds), 0.0),
                func.coalesce(func.max(ToolCallRow.run_seconds), 0.0),
            )
            .where(ToolCallRow.started_at >= since)
            .group_by(*groups)
            .order_by(*groups[:-1], calls.desc(), ToolCallRow.tool)
        )
        if user_key is not None:
            query = query.where(ToolCallRow.user_key == user_key)
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return [_stats(tuple(row), per_user) for row in rows]


def _count_where(condition: Any) -> Any:
    """``SUM(CASE WHEN condition THEN 1 ELSE 0 END)``: portable on SQLite and PostgreSQL."""
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _stats(row: tuple[Any, ...], per_user: bool) -> ToolCallStats:
    user, rest = (str(row[0]), row[1:]) if per_user else (None, row)
    tool, calls, errors, refused, cancelled, seconds, longest = rest
    return ToolCallStats(
        tool=str(tool),
        calls=int(calls),
        errors=int(errors),
        refused=int(refused),
        cancelled=int(cancelled),
        run_seconds=float(seconds),
        longest_seconds=float(longest),
        user=user,
    )
