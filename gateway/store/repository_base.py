"""What every part of the repository shares: the store, its transactions and its errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from sqlalchemy import CursorResult, Result, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.store.db import Store
from gateway.store.tables import SessionRow, utcnow


class StoreError(Exception):
    """A request the store cannot carry out as asked."""


class NotFoundError(StoreError, LookupError):
    """The session, message or inbound record a write refers to does not exist."""


class RepositoryBase:
    """Holds the store and opens the two kinds of transaction the repository uses."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def store(self) -> Store:
        """The open store (engine, sessionmaker, write lock) for code that owns its own tables."""
        return self._store

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncSession]:
        """A session for reads; WAL lets it run while a writer writes."""
        async with self._store.sessionmaker() as session:
            yield session

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[AsyncSession]:
        """One short write transaction, committed on exit; one writer at a time.

        Never await anything but the database inside: the lock is held until the commit.
        """
        async with self._store.write_lock, self._store.sessionmaker.begin() as session:
            yield session


def rowcount(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE touched."""
    return cast(CursorResult[Any], result).rowcount


async def touch_session(session: AsyncSession, session_id: int, **values: Any) -> None:
    """Update a session that must exist, setting ``updated_at`` to now unless given."""
    values.setdefault("updated_at", utcnow())
    result = await session.execute(
        update(SessionRow).where(SessionRow.id == session_id).values(**values)
    )
    if rowcount(result) == 0:
        raise NotFoundError(f"session {session_id} does not exist")
