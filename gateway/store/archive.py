"""The store as context engines see it: :class:`StoreArchive` implements
:class:`agent.engines.message_archive.MessageArchive`.

Engines (plugins included) get this object instead of the repository: they read messages by
session, range and id, search them, and keep their own tables through
:meth:`StoreArchive.read_records`, :meth:`StoreArchive.search_records` and
:meth:`StoreArchive.write_records` (queued in the store's group commit like every other write),
whose requests :mod:`gateway.store.engine_records` runs as SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast
from weakref import WeakKeyDictionary

from sqlalchemy import Connection, select

from agent.engines.message_archive import (
    ArchivedMessage,
    MessageHit,
    MessageKind,
    Record,
    RecordChange,
    RecordQuery,
    RecordSearch,
    SkipHit,
    SkipRecord,
)
from gateway.store.db import Store
from gateway.store.engine_records import RecordTables, read_records, search_records, write_records
from gateway.store.records import MessageRecord
from gateway.store.repository_base import RepositoryBase
from gateway.store.repository_messages import message_record
from gateway.store.tables import MessageRow, SessionRow, messages_table
from gateway.store.text_search import prepare_search, search_attempts

# SQLite: the FTS5 table ``lcm_messages_fts`` kept in step with ``messages`` by a trigger
# (core revision 0002; the name predates the search moving into the store). PostgreSQL: the same
# ``to_tsvector('simple', ...)`` expression the GIN index of revision 0002 is built on.
_SQLITE_SEARCH = """
SELECT m.id, m.session_id, m.role, m.created_at, f.body AS body
FROM lcm_messages_fts AS f JOIN messages AS m ON m.id = f.rowid
WHERE lcm_messages_fts MATCH :query AND m.session_id IN :session_ids
  AND m.role != 'system' AND m.kind != 'derived'
ORDER BY bm25(lcm_messages_fts), m.id LIMIT :limit"""

_POSTGRES_SEARCH = """
SELECT m.id, m.session_id, m.role, m.created_at, m.content::text AS body
FROM messages AS m
WHERE to_tsvector('simple', coalesce(m.content::text, '')) @@ plainto_tsquery('simple', :query)
  AND m.session_id IN :session_ids AND m.role != 'system' AND m.kind != 'derived'
ORDER BY ts_rank(to_tsvector('simple', coalesce(m.content::text, '')),
                 plainto_tsquery('simple', :query)) DESC, m.id
LIMIT :limit"""


_RECORD_TABLES: WeakKeyDictionary[Store, RecordTables] = WeakKeyDictionary()
"""The engine tables of each open store, reflected once (archives are made per use)."""


class StoreArchive(RepositoryBase):
    """The :class:`~agent.engines.message_archive.MessageArchive` over one open store."""

    @property
    def dialect_name(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._store.dialect_name

    @property
    def _record_tables(self) -> RecordTables:
        return _RECORD_TABLES.setdefault(self._store, RecordTables())

    async def session_messages(
        self, session_id: int, first_id: int | None = None, last_id: int | None = None
    ) -> list[ArchivedMessage]:
        """The session's messages with ids in ``[first_id, last_id]``, in order of storage."""
        query = select(messages_table).where(MessageRow.session_id == session_id)
        if first_id is not None:
            query = query.where(MessageRow.id >= first_id)
        if last_id is not None:
            query = query.where(MessageRow.id <= last_id)
        async with self._reading() as session:
            result = await session.execute(query.order_by(MessageRow.id))
            return [archived(message_record(row)) for row in result]

    async def messages_by_id(self, message_ids: Sequence[int]) -> list[ArchivedMessage]:
        """The stored messages among ``message_ids``, in id order."""
        if not message_ids:
            return []
        query = (
            select(messages_table)
            .where(MessageRow.id.in_(list(message_ids)))
            .order_by(MessageRow.id)
        )
        async with self._reading() as session:
            result = await session.execute(query)
            return [archived(message_record(row)) for row in result]

    async def sessions_sharing_key(self, session_id: int, limit: int) -> list[int]:
        """Ids of the ``limit`` most recently updated sessions with this session's key."""
        key = select(SessionRow.key).where(SessionRow.id == session_id).scalar_subquery()
        query = (
            select(SessionRow.id)
            .where(SessionRow.key == key)
            .order_by(SessionRow.updated_at.desc(), SessionRow.id.desc())
            .limit(limit)
        )
        async with self._reading() as session:
            return list((await session.scalars(query)).all())

    async def search_messages(
        self, query: str, session_ids: Sequence[int], limit: int, skip: SkipHit | None = None
    ) -> list[MessageHit]:
        """Said messages of ``session_ids`` matching ``query``, best first (see the protocol)."""
        search = prepare_search(
            query, self.dialect_name, sqlite_sql=_SQLITE_SEARCH, postgres_sql=_POSTGRES_SEARCH
        )
        if search is None or not session_ids:
            return []
        sqlite = self.dialect_name == "sqlite"
        for match in search.attempts:
            params = {"query": match, "session_ids": list(session_ids), "limit": limit}
            async with self._store.engine.connect() as connection:
                rows = (await connection.execute(search.statement, params)).mappings().all()
            hits = [hit for hit in (_hit(row, sqlite) for row in rows) if not (skip and skip(hit))]
            if hits:
                return hits
        return []

    async def read_records(self, query: RecordQuery) -> list[Record]:
        """The rows of an engine's own table that ``query`` asks for (beside the writer)."""
        tables = self._record_tables
        async with self._store.engine.connect() as connection:
            return await connection.run_sync(lambda sync: read_records(sync, tables, query))

    async def search_records(
        self, search: RecordSearch, skip: SkipRecord | None = None
    ) -> list[Record]:
        """Rows of an engine's own table matching ``search``, best first (see the protocol)."""
        tables = self._record_tables
        for match in search_attempts(search.query, self.dialect_name):

            def run(sync: Connection, match: str = match) -> list[Record]:
                return search_records(sync, tables, search, match)

            async with self._store.engine.connect() as connection:
                rows = await connection.run_sync(run)
            hits = [row for row in rows if not (skip and skip(row))]
            if hits:
                return hits
        return []

    async def write_records(self, *changes: RecordChange) -> list[list[int]]:
        """Apply ``changes`` in one job of the store's next group commit; the inserted ids."""
        tables = self._record_tables
        return await self._write(lambda sync: write_records(sync, tables, changes))


def archived(record: MessageRecord) -> ArchivedMessage:
    """The engine's view of a stored message."""
    return ArchivedMessage(
        id=record.id,
        session_id=record.session_id,
        role=record.role,
        kind=cast(MessageKind, record.kind),
        token_count=record.token_count,
        created_at=record.created_at,
        message=record.as_message(),
    )


def _hit(row: Any, sqlite: bool) -> MessageHit:
    created = row["created_at"]
    # Raw SQL on SQLite hands timestamps back as naive UTC text.
    if not isinstance(created, datetime):
        created = datetime.fromisoformat(str(created))
    created = created.replace(tzinfo=UTC) if created.tzinfo is None else created.astimezone(UTC)
    return MessageHit(
        id=int(row["id"]),
        session_id=int(row["session_id"]),
        role=str(row["role"]),
        created_at=created,
        text=str(row["body"] or "") if sqlite else _json_text(row["body"]),
    )


def _json_text(body: str | None) -> str:
    """PostgreSQL's ``content::text`` is the content's JSON: a string content unwrapped."""
    try:
        value = json.loads(body or "null")
    except ValueError:
        return body or ""
    return value if isinstance(value, str) else (body or "")
