"""The operators' pages (``hermes dashboard``, ``/metrics``): sums over the whole store.

Spend per day is grouped exactly as ``/usage`` groups one session's calls (purpose, model,
visit start), so the dashboard prices its buckets with :func:`gateway.reports.usage.spend`,
and its day and user groups are those of ``hermes usage`` (:mod:`gateway.store.repository_users`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, select

from gateway.store.records import CompactionRecord, InboundRecord, UsageGroup
from gateway.store.repository_base import RepositoryBase
from gateway.store.repository_compactions import compaction_record
from gateway.store.repository_inbound import inbound_record
from gateway.store.repository_usage import _usage_group, grouped_usage
from gateway.store.repository_users import user_group, utc_day
from gateway.store.schema_heads import database_heads
from gateway.store.tables import ApiUsageRow, CompactionRow, InboundRow, MessageRow, SessionRow


@dataclass(frozen=True, slots=True)
class DayUsageGroup:
    """One UTC day's usage of one purpose, model and visit start."""

    day: str
    group: UsageGroup


@dataclass(frozen=True, slots=True)
class SessionListing:
    """A row of the dashboard's sessions page."""

    id: int
    key: str
    platform: str
    user_id: str | None
    title: str | None
    model: str | None
    active: bool
    updated_at: datetime
    message_count: int
    cost_usd: float
    last_prompt_tokens: int | None


@dataclass(frozen=True, slots=True)
class UserDaySpend:
    """One user's recorded cost on one UTC day."""

    user: str
    day: str
    calls: int
    cost_usd: float


class DashboardQueries(RepositoryBase):
    """Reads for the operators' pages and the Prometheus totals."""

    async def usage_groups_by_day(
        self, since: datetime, session_id: int | None = None
    ) -> list[DayUsageGroup]:
        """Usage since ``since`` (of one session, or all) per UTC day and (purpose, model,
        visit start), oldest first."""
        day = utc_day()
        columns = (day, ApiUsageRow.purpose, ApiUsageRow.model, ApiUsageRow.visit_start)
        query = (
            grouped_usage(day)
            .where(ApiUsageRow.created_at >= since)
            .group_by(*columns)
            .order_by(*columns)
        )
        if session_id is not None:
            query = query.where(ApiUsageRow.session_id == session_id)
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return [DayUsageGroup(str(row[0]), _usage_group(tuple(row[1:]))) for row in rows]

    async def spend_by_user_and_day(self, since: datetime) -> list[UserDaySpend]:
        """Recorded cost since ``since`` per user (as ``hermes usage --by user``) and UTC day."""
        user, day = user_group(), utc_day()
        query = (
            select(
                user,
                day,
                func.count(ApiUsageRow.id),
                func.coalesce(func.sum(ApiUsageRow.cost_usd), 0.0),
            )
            .where(ApiUsageRow.created_at >= since)
            .group_by(user, day)
            .order_by(user, day)
        )
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return [UserDaySpend(str(u), str(d), int(c), float(cost)) for u, d, c, cost in rows]

    async def search_sessions(self, text: str = "", *, limit: int = 200) -> list[SessionListing]:
        """Sessions whose title, key, user, platform or model contains ``text`` (any case),
        most recently updated first, each with its message count and recorded cost."""
        message_count = (
            select(func.count(MessageRow.id))
            .where(MessageRow.session_id == SessionRow.id)
            .scalar_subquery()
        )
        cost = (
            select(func.coalesce(func.sum(ApiUsageRow.cost_usd), 0.0))
            .where(ApiUsageRow.session_id == SessionRow.id)
            .scalar_subquery()
        )
        query = select(SessionRow, message_count, cost).order_by(
            SessionRow.updated_at.desc(), SessionRow.id.desc()
        )
        if text:
            pattern = f"%{text.lower()}%"
            query = query.where(
                or_(
                    *(
                        func.lower(func.coalesce(column, "")).like(pattern)
                        for column in (
                            SessionRow.title,
                            SessionRow.key,
                            SessionRow.user_id,
                            SessionRow.platform,
                            SessionRow.model,
                        )
                    )
                )
            )
        async with self._reading() as session:
            result = await session.execute(query.limit(limit))
            return [
                SessionListing(
                    id=row.id,
                    key=row.key,
                    platform=row.platform,
                    user_id=row.user_id,
                    title=row.title,
                    model=row.model,
                    active=row.active,
                    updated_at=row.updated_at,
                    message_count=int(count),
                    cost_usd=float(spent),
                    last_prompt_tokens=row.last_prompt_tokens,
                )
                for row, count, spent in result
            ]

    async def compactions_since(self, since: datetime) -> list[CompactionRecord]:
        """Every session's compaction attempts since ``since``, oldest first."""
        query = (
            select(CompactionRow)
            .where(CompactionRow.created_at >= since)
            .order_by(CompactionRow.id)
        )
        async with self._reading() as session:
            rows = (await session.scalars(query)).all()
        return [compaction_record(row) for row in rows]

    async def summary_costs(self, session_id: int) -> list[tuple[datetime, float]]:
        """(time, cost) of each summary call of a session, oldest first: the spend behind its
        compactions (a compaction's summary is paid just before the compaction is stored)."""
        query = (
            select(ApiUsageRow.created_at, ApiUsageRow.cost_usd)
            .where(ApiUsageRow.session_id == session_id, ApiUsageRow.purpose == "compression")
            .order_by(ApiUsageRow.created_at, ApiUsageRow.id)
        )
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return [(row[0], float(row[1])) for row in rows]

    async def failed_inbound(self, limit: int = 100) -> list[InboundRecord]:
        """The newest received messages whose handling failed, with the reason."""
        query = (
            select(InboundRow)
            .where(InboundRow.status == "failed")
            .order_by(InboundRow.id.desc())
            .limit(limit)
        )
        async with self._reading() as session:
            rows = (await session.scalars(query)).all()
        return [inbound_record(row) for row in rows]

    async def schema_revisions(self) -> frozenset[str] | None:
        """The migration revisions the database records (None: not migrated yet)."""
        return await database_heads(self._store.engine)

    async def inbound_counts(self) -> dict[tuple[str, str], int]:
        """Received platform messages per (platform, status)."""
        query = select(InboundRow.platform, InboundRow.status, func.count(InboundRow.id)).group_by(
            InboundRow.platform, InboundRow.status
        )
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return {(str(p), str(s)): int(n) for p, s, n in rows}

    async def compaction_counts(self) -> dict[tuple[str, str], int]:
        """Compaction attempts per (trigger, outcome)."""
        query = select(
            CompactionRow.trigger, CompactionRow.outcome, func.count(CompactionRow.id)
        ).group_by(CompactionRow.trigger, CompactionRow.outcome)
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return {(str(t), str(o)): int(n) for t, o, n in rows}
