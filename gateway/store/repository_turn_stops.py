"""Turn stops: the turns the agent ended at the step limit, counted for ``/usage`` and
``hermes usage`` (a person who lets the bot work should see how often it ran out of steps)."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Table, func, insert, select

from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import TurnStopRow

turn_stops_table = cast(Table, TurnStopRow.__table__)


class TurnStopQueries(RepositoryBase):
    """Recording turns stopped at the step limit and counting them."""

    async def record_turn_stop(
        self,
        session_id: int | None,
        reason: str,
        requests: int,
        *,
        stopped_at: datetime,
        user_key: str | None = None,
    ) -> None:
        """Store that a turn of ``user_key`` stopped for ``reason`` after ``requests``."""
        row = {
            "session_id": session_id,
            "user_key": user_key,
            "reason": reason,
            "requests": requests,
            "stopped_at": stopped_at,
        }

        def insert_stop(connection: Connection) -> None:
            connection.execute(insert(turn_stops_table), row)

        await self._write(insert_stop)

    async def turn_stops_since(self, since: datetime, user_key: str | None = None) -> int:
        """Turns stopped at the step limit since ``since``, of one user or of everyone."""
        query = select(func.count(TurnStopRow.id)).where(TurnStopRow.stopped_at >= since)
        if user_key is not None:
            query = query.where(TurnStopRow.user_key == user_key)
        async with self._reading() as session:
            return int((await session.execute(query)).scalar_one())
