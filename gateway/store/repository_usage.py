"""API usage: one row per model call, summed per session for ``/usage``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Select, func, insert, select

from agent.types import Usage
from gateway.store.records import UsageGroup, UsageTotals
from gateway.store.repository_base import RepositoryBase, touch_session
from gateway.store.tables import ApiUsageRow, utcnow

_INSERT_USAGE = insert(ApiUsageRow)

CHAT_PURPOSE = "chat"
"""Usage of the main model answering the user; compaction calls use ``"compression"``."""


class UsageQueries(RepositoryBase):
    """Recording and summing the token usage and cost of API calls."""

    async def record_usage(
        self,
        session_id: int | None,
        usage: Usage,
        *,
        provider: str,
        cost_usd: float,
        purpose: str = CHAT_PURPOSE,
        last_prompt_tokens: int | None = None,
        visit_start: bool = False,
        cache_write_1h_tokens: int | None = None,
        user_key: str | None = None,
    ) -> None:
        """Store the usage of one API call (``session_id`` None for calls outside a session).

        ``last_prompt_tokens`` also updates the session's last API-reported prompt size, in the
        same transaction (one commit per model call instead of two). ``visit_start`` marks the
        first call of a turn that found the prompt cache cold; ``cache_write_1h_tokens`` is the
        part of the writes priced on the 1-hour tier (default: as the provider reported it).
        ``user_key`` (``platform:user_id``) is the user whose message the call answered.
        """
        row: dict[str, Any] = {
            "session_id": session_id,
            "purpose": purpose,
            "provider": provider,
            "model": usage.model,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "cache_write_1h_tokens": (
                usage.cache_write_1h_tokens
                if cache_write_1h_tokens is None
                else cache_write_1h_tokens
            ),
            "visit_start": visit_start,
            "cost_usd": cost_usd,
            "created_at": utcnow(),
            "user_key": user_key,
        }

        def insert_usage(connection: Connection) -> None:
            if session_id is not None and last_prompt_tokens is not None:
                touch_session(connection, session_id, last_prompt_tokens=last_prompt_tokens)
            connection.execute(_INSERT_USAGE, row)

        await self._write(insert_usage)

    async def usage_totals(self, session_id: int) -> UsageTotals:
        """Calls, tokens and cost summed over every API call of the session."""
        total = UsageTotals()
        for group in await self.usage_breakdown(session_id):
            total = total + group.totals
        return total

    async def usage_breakdown(self, session_id: int) -> list[UsageGroup]:
        """The session's usage summed per (purpose, model, visit start), in a stable order."""
        query = (
            grouped_usage()
            .where(ApiUsageRow.session_id == session_id)
            .group_by(ApiUsageRow.purpose, ApiUsageRow.model, ApiUsageRow.visit_start)
            .order_by(ApiUsageRow.purpose, ApiUsageRow.model, ApiUsageRow.visit_start)
        )
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return [_usage_group(tuple(row)) for row in rows]


def grouped_usage(*extra: Any) -> Select[Any]:
    """Usage summed per (purpose, model, visit start), after the ``extra`` columns: the rows
    :func:`_usage_group` reads (past the extra columns)."""
    return select(
        *extra,
        ApiUsageRow.purpose,
        ApiUsageRow.model,
        ApiUsageRow.visit_start,
        func.count(ApiUsageRow.id),
        func.coalesce(func.sum(ApiUsageRow.input_tokens), 0),
        func.coalesce(func.sum(ApiUsageRow.output_tokens), 0),
        func.coalesce(func.sum(ApiUsageRow.cache_read_tokens), 0),
        func.coalesce(func.sum(ApiUsageRow.cache_write_tokens), 0),
        func.coalesce(func.sum(ApiUsageRow.cache_write_1h_tokens), 0),
        func.coalesce(func.sum(ApiUsageRow.cost_usd), 0.0),
    )


def _usage_group(row: tuple[Any, ...]) -> UsageGroup:
    """A group from one row of :meth:`UsageQueries.usage_breakdown`'s query."""
    (
        purpose,
        model,
        visit_start,
        calls,
        input_tokens,
        output_tokens,
        cache_read,
        cache_write,
        cache_write_1h,
        cost,
    ) = row
    totals = UsageTotals(
        calls=int(calls),
        input_tokens=int(input_tokens),
        output_tokens=int(output_tokens),
        cache_read_tokens=int(cache_read),
        cache_write_tokens=int(cache_write),
        cost_usd=float(cost),
        cache_write_1h_tokens=int(cache_write_1h),
    )
    return UsageGroup(purpose=purpose, model=model, totals=totals, visit_start=bool(visit_start))
