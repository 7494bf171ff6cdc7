"""Quarantined updates (the dead-letter table): keeping them, counting them."""

from __future__ import annotations

from typing import cast

from sqlalchemy import Connection, Table, func, insert, select

from gateway.quarantine import DeadLetter
from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import DeadLetterRow, utcnow

dead_letters_table = cast(Table, DeadLetterRow.__table__)


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
