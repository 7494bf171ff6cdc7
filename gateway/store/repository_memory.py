"""Memory entries: what the bot keeps for one user (or one group chat) across sessions.

Every query names its owner (scope, platform, owner id), so no call can read or change another
owner's entries; an entry id of someone else is simply not found.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, Table, delete, insert, select, update

from agent.memory import MemoryEntry, MemoryOwner
from gateway.store.repository_base import NotFoundError, RepositoryBase, rowcount
from gateway.store.tables import MemoryRow, utcnow

memories_table = cast(Table, MemoryRow.__table__)


def _of(owner: MemoryOwner) -> list[Any]:
    return [
        MemoryRow.scope == owner.scope,
        MemoryRow.platform == owner.platform,
        MemoryRow.owner_id == owner.owner_id,
    ]


def _entry(row: MemoryRow) -> MemoryEntry:
    return MemoryEntry(row.id, row.text, row.created_at, row.updated_at)


def delete_users_memories(connection: Connection, platform: str, user_id: str) -> int:
    """Delete a user's personal memory (``/forget``); returns how many entries went."""
    owner = MemoryOwner("user", platform, user_id)
    return rowcount(connection.execute(delete(MemoryRow).where(*_of(owner))))


class MemoryQueries(RepositoryBase):
    """Listing, adding, changing and removing one owner's memory entries."""

    async def list_memories(self, owner: MemoryOwner) -> list[MemoryEntry]:
        """The owner's entries, oldest first."""
        query = select(MemoryRow).where(*_of(owner)).order_by(MemoryRow.id)
        async with self._reading() as session:
            return [_entry(row) for row in (await session.scalars(query)).all()]

    async def add_memory(self, owner: MemoryOwner, text: str) -> MemoryEntry:
        """Store a new entry for the owner."""
        now = utcnow()
        values = {
            "scope": owner.scope,
            "platform": owner.platform,
            "owner_id": owner.owner_id,
            "text": text,
            "created_at": now,
            "updated_at": now,
        }

        def add(connection: Connection) -> int:
            result = connection.execute(insert(memories_table).returning(MemoryRow.id), values)
            return int(result.scalar_one())

        return MemoryEntry(await self._write(add), text, now, now)

    async def replace_memory(self, owner: MemoryOwner, entry_id: int, text: str) -> MemoryEntry:
        """Change the text of one of the owner's entries (``NotFoundError`` if not theirs)."""
        now = utcnow()
        statement = (
            update(MemoryRow)
            .where(MemoryRow.id == entry_id, *_of(owner))
            .values(text=text, updated_at=now)
            .returning(MemoryRow.created_at)
        )

        def change(connection: Connection) -> Any:
            created = connection.execute(statement).scalar_one_or_none()
            if created is None:
                raise NotFoundError(f"memory entry {entry_id} does not exist")
            return created

        created_at = await self._write(change)
        return MemoryEntry(entry_id, text, created_at, now)

    async def remove_memory(self, owner: MemoryOwner, entry_id: int) -> None:
        """Delete one of the owner's entries (``NotFoundError`` if not theirs)."""
        statement = delete(MemoryRow).where(MemoryRow.id == entry_id, *_of(owner))

        def remove(connection: Connection) -> None:
            if rowcount(connection.execute(statement)) == 0:
                raise NotFoundError(f"memory entry {entry_id} does not exist")

        await self._write(remove)
