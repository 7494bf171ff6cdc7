"""``hermes sessions list`` on a SQLite file without SQLAlchemy: the start-up is the command.

Importing SQLAlchemy (engine, ORM, dialects) and the store's tables costs about 0.4 s, more
than everything else a listing does, and a listing is what scripts and operators run most. So
when the database is a SQLite file already at the newest schema, the list is read with the
standard library's ``sqlite3``, read-only, with the same query and the same values as
:meth:`gateway.store.repository_sessions.SessionRepository.list_sessions` (a test compares the
two on the same database). Anything else (PostgreSQL, no file yet, a schema to upgrade, any
SQLite error) answers None and the caller goes the usual way through the repository, which
also creates and migrates the database.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from gateway.store.locations import VERSION_LOCATIONS, sqlite_path
from gateway.store.records import SessionSummary
from gateway.store.schema_heads import VERSION_TABLE, script_heads

_LIST_SQL = """
SELECT s.id, s.key, s.platform, s.active, s.created_at, s.updated_at, s.title,
       (SELECT count(m.id) FROM messages AS m WHERE m.session_id = s.id)
FROM sessions AS s
ORDER BY s.updated_at DESC, s.id DESC
LIMIT ?
"""
"""The repository's listing query, as SQLAlchemy compiles it for SQLite."""
BUSY_TIMEOUT_MS = 5_000
"""How long the read waits for the daemon's writer to finish a checkpoint."""


def quick_session_list(
    url: str, limit: int | None, locations: Iterable[Path] = VERSION_LOCATIONS
) -> list[SessionSummary] | None:
    """Sessions, most recently updated first (``limit`` None: all), read without SQLAlchemy;
    None when this database cannot be read this way."""
    path = sqlite_path(url)
    heads = script_heads(locations)
    if path is None or heads is None or not path.is_file():
        return None
    try:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as connection:
            connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            versions = connection.execute(f"SELECT version_num FROM {VERSION_TABLE}")
            if frozenset(str(row[0]) for row in versions) != heads:
                return None
            rows = connection.execute(_LIST_SQL, (-1 if limit is None else limit,)).fetchall()
    except sqlite3.Error:
        return None
    return [_summary(row) for row in rows]


def _summary(row: tuple[object, ...]) -> SessionSummary:
    id_, key, platform, active, created_at, updated_at, title, count = row
    return SessionSummary(
        id=int(str(id_)),
        key=str(key),
        platform=str(platform),
        active=bool(active),
        created_at=_utc(created_at),
        updated_at=_utc(updated_at),
        message_count=int(str(count)),
        title=None if title is None else str(title),
    )


def _utc(value: object) -> datetime:
    """A stored datetime (naive UTC text, as :class:`gateway.store.tables.UTCDateTime` writes
    it on SQLite) as a timezone-aware UTC value."""
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)
