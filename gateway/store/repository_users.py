"""Users: run-time access (``/allow``, ``/deny``, ``hermes users``) and spend per user.

Access rows override the configuration's ``allowed_users``: one row per platform and user id
or username (a new decision replaces the old one). Spend sums ``api_usage.cost_usd`` by the
``user_key`` (``platform:user_id``) the call was made for, from a point in time (the start of
the user's day, of the month), for budgets and ``/usage``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, String, delete, func, insert, select

from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import ApiUsageRow, UserAccessRow, utcnow

Access = Literal["allow", "deny"]
UsageGrouping = Literal["user", "day", "model"]
NO_USER = "(no user)"
"""The user group of calls made for no one (summaries outside a user's turn)."""


@dataclass(frozen=True, slots=True)
class AccessRecord:
    """One run-time decision about a user (by id, or by username without ``@``)."""

    platform: str
    user_id: str | None
    username: str | None
    access: Access
    set_by: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SpendRow:
    """Usage summed over one group (a user, a day or a model)."""

    group: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float

    @property
    def cache_hit_rate(self) -> float:
        """Share of the prompt read from the cache."""
        prompt = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / prompt if prompt else 0.0


class UserQueries(RepositoryBase):
    """Run-time access decisions and spend per user."""

    async def set_access(
        self,
        platform: str,
        *,
        user_id: str | None = None,
        username: str | None = None,
        access: Access,
        set_by: str,
    ) -> None:
        """Allow or deny a user by id or by username (replacing any earlier decision)."""
        if (user_id is None) == (username is None):
            raise ValueError("give exactly one of user_id and username")
        name = username.lower().removeprefix("@") if username is not None else None
        match = (
            UserAccessRow.user_id == user_id
            if user_id is not None
            else UserAccessRow.username == name
        )
        row = {
            "platform": platform,
            "user_id": user_id,
            "username": name,
            "access": access,
            "set_by": set_by,
            "updated_at": utcnow(),
        }

        def replace(connection: Connection) -> None:
            connection.execute(
                delete(UserAccessRow).where(UserAccessRow.platform == platform, match)
            )
            connection.execute(insert(UserAccessRow), row)

        await self._write(replace)

    async def access_records(self, platform: str | None = None) -> list[AccessRecord]:
        """Every run-time decision (of one platform), oldest first."""
        query = select(UserAccessRow).order_by(UserAccessRow.id)
        if platform is not None:
            query = query.where(UserAccessRow.platform == platform)
        async with self._reading() as session:
            rows = (await session.execute(query)).scalars().all()
        return [
            AccessRecord(
                r.platform, r.user_id, r.username, _access(r.access), r.set_by, r.updated_at
            )
            for r in rows
        ]

    async def spend_since(self, since: datetime, user_key: str | None = None) -> float:
        """USD spent since ``since``, by one user (``platform:user_id``) or by everyone."""
        query = select(func.coalesce(func.sum(ApiUsageRow.cost_usd), 0.0)).where(
            ApiUsageRow.created_at >= since
        )
        if user_key is not None:
            query = query.where(ApiUsageRow.user_key == user_key)
        async with self._reading() as session:
            return float((await session.execute(query)).scalar_one())

    async def usage_by(
        self, grouping: UsageGrouping, since: datetime, user_key: str | None = None
    ) -> list[SpendRow]:
        """Usage since ``since`` per user, per UTC day or per model (one user's, or all)."""
        column: Any = {
            "user": user_group(),
            "day": utc_day(),
            "model": ApiUsageRow.model,
        }[grouping]
        query = (
            select(
                column,
                func.count(ApiUsageRow.id),
                func.coalesce(func.sum(ApiUsageRow.input_tokens), 0),
                func.coalesce(func.sum(ApiUsageRow.output_tokens), 0),
                func.coalesce(func.sum(ApiUsageRow.cache_read_tokens), 0),
                func.coalesce(func.sum(ApiUsageRow.cache_write_tokens), 0),
                func.coalesce(func.sum(ApiUsageRow.cost_usd), 0.0),
            )
            .where(ApiUsageRow.created_at >= since)
            .group_by(column)
            .order_by(column)
        )
        if user_key is not None:
            query = query.where(ApiUsageRow.user_key == user_key)
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return [
            SpendRow(str(g), int(c), int(i), int(o), int(r), int(w), float(cost))
            for g, c, i, o, r, w, cost in rows
        ]


def utc_day() -> Any:
    """A call's UTC day (``YYYY-MM-DD``) as SQL: the day groups of ``hermes usage --by day``."""
    return func.substr(func.cast(ApiUsageRow.created_at, String()), 1, 10)


def user_group() -> Any:
    """A call's user as SQL (``(no user)`` for calls made for no one)."""
    return func.coalesce(ApiUsageRow.user_key, NO_USER)


def _access(value: str) -> Access:
    return "allow" if value == "allow" else "deny"
