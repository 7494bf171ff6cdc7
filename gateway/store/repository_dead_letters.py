"""Quarantined updates (the dead-letter table): keeping them, counting and listing them, and
deleting them: one an operator looked at, those older than the retention period, and a
forgotten user's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Table, delete, func, insert, select

from gateway.messages.quarantine import DeadLetter, mentions_user
from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import DeadLetterRow, utcnow

dead_letters_table = cast(Table, DeadLetterRow.__table__)


@dataclass(frozen=True, slots=True)
class DeadLetterRecord:
    """A quarantined update as kept: its reason and its raw JSON."""

    id: int
    platform: str
    ref: str | None
    reason: str
    detail: str
    raw: str
    received_at: datetime


class DeadLetterQueries(RepositoryBase):
    """Writing and counting quarantined updates."""

    async def add_dead_letter(self, letter: DeadLetter) -> bool:
        """Keep an update that could not be handled, raw, with its reason; False when this
        update (same platform and ref) is kept already: quarantined again after a restart
        that came before its offset was confirmed."""
        row = {
            "platform": letter.platform,
            "ref": letter.ref,
            "reason": letter.reason,
            "detail": letter.stored_detail(),
            "raw": letter.raw_json(),
            "received_at": utcnow(),
        }

        def insert_unless_kept(connection: Connection) -> bool:
            if letter.ref is not None:
                kept = select(DeadLetterRow.id).where(
                    DeadLetterRow.platform == letter.platform, DeadLetterRow.ref == letter.ref
                )
                if connection.execute(kept.limit(1)).first() is not None:
                    return False
            connection.execute(insert(dead_letters_table), row)
            return True

        return await self._write(insert_unless_kept)

    async def count_dead_letters(self, platform: str | None = None) -> int:
        """How many updates are quarantined (on one platform, or on all)."""
        query = select(func.count()).select_from(DeadLetterRow)
        if platform is not None:
            query = query.where(DeadLetterRow.platform == platform)
        async with self._reading() as session:
            return int(await session.scalar(query) or 0)

    async def list_dead_letters(self, limit: int = 100) -> list[DeadLetterRecord]:
        """The newest quarantined updates first."""
        query = select(DeadLetterRow).order_by(DeadLetterRow.id.desc()).limit(limit)
        async with self._reading() as session:
            rows = (await session.scalars(query)).all()
        return [
            DeadLetterRecord(r.id, r.platform, r.ref, r.reason, r.detail, r.raw, r.received_at)
            for r in rows
        ]

    async def delete_dead_letter(self, letter_id: int) -> bool:
        """Delete one quarantined update; False when there was none with this id."""

        def delete_one(connection: Connection) -> bool:
            done = connection.execute(delete(DeadLetterRow).where(DeadLetterRow.id == letter_id))
            return bool(done.rowcount)

        return await self._write(delete_one)

    async def prune_dead_letters(self, before: datetime) -> int:
        """Delete the updates quarantined before ``before``; returns how many."""

        def prune(connection: Connection) -> int:
            stale = delete(DeadLetterRow).where(DeadLetterRow.received_at < before)
            return int(connection.execute(stale).rowcount or 0)

        return await self._write(prune)


def delete_users_dead_letters(connection: Connection, platform: str, user_id: str) -> int:
    """Delete ``platform``'s quarantined updates that name ``user_id`` (as sender or quoted
    author, where the raw update reads as JSON); returns how many (part of ``/forget``)."""
    rows = connection.execute(
        select(DeadLetterRow.id, DeadLetterRow.raw).where(DeadLetterRow.platform == platform)
    ).all()
    theirs = [int(row[0]) for row in rows if mentions_user(str(row[1]), user_id)]
    if theirs:
        connection.execute(delete(DeadLetterRow).where(DeadLetterRow.id.in_(theirs)))
    return len(theirs)
