"""What every part of the repository shares: the store, its transactions and its errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from sqlalchemy import Connection, CursorResult, Result, bindparam, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.store.db import Store
from gateway.store.tables import SessionRow, utcnow
from gateway.store.writer import T, WriteJob


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
        """The open store (engine, sessionmaker, writer)."""
        return self._store

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncSession]:
        """A session for reads; WAL lets it run while a writer writes."""
        async with self._store.sessionmaker() as session:
            yield session

    async def _write(self, job: WriteJob[T]) -> T:
        """Run a write job (a function of a sync connection) in the next group commit.

        The job must leave every effect in the database and return what the caller needs:
        a batch that fails is replayed job by job (see :mod:`gateway.store.writer`).
        """
        return await self._store.write(job)

    async def check_writable(self) -> None:
        """Take the write lock in a transaction that changes nothing (``hermes doctor``);
        raises the driver's error when the database is read-only or locked out."""

        def touch(connection: Connection) -> None:
            connection.execute(update(SessionRow).where(SessionRow.id == -1).values(active=False))

        await self._write(touch)


def rowcount(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE touched."""
    return cast(CursorResult[Any], result).rowcount


_UPDATE_SESSION = update(SessionRow).where(SessionRow.id == bindparam("session_id_"))
"""Built once: the SET clause follows the keys of each call's parameters."""


def touch_session(connection: Connection, session_id: int, **values: Any) -> None:
    """Update a session that must exist, setting ``updated_at`` to now unless given."""
    values.setdefault("updated_at", utcnow())
    result = connection.execute(_UPDATE_SESSION, {"session_id_": session_id, **values})
    if rowcount(result) == 0:
        raise NotFoundError(f"session {session_id} does not exist")
