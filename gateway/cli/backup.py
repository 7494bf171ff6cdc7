"""``hermes backup`` / ``hermes restore`` for the SQLite store.

A backup uses SQLite's online backup API in one step: a consistent copy of the database as it
was when the backup began, taken while the daemon goes on writing (WAL lets readers and the
writer run together). A restore first checks the backup (``PRAGMA integrity_check`` and the
store's tables), keeps the current database beside it, then copies the backup in through the
same API, so the WAL and its index stay consistent. PostgreSQL has its own tools (``pg_dump``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REQUIRED_TABLES = ("alembic_version", "sessions", "messages")
"""A file without these is not a backup of this store."""


class BackupError(RuntimeError):
    """The backup or restore cannot be done as asked (the reason is the message)."""


@dataclass(frozen=True, slots=True)
class BackupReport:
    """What a backup holds."""

    path: Path
    sessions: int
    messages: int
    size_bytes: int


def backup_sqlite(database: Path, target: Path) -> BackupReport:
    """Copy ``database`` to ``target`` (a new file) while it may be in use."""
    if not database.exists():
        raise BackupError(f"no database at {database}")
    if target.exists():
        raise BackupError(f"{target} exists already; choose a new file")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(database)) as source:
        with contextlib.closing(sqlite3.connect(partial)) as copy:
            source.backup(copy)  # one step: the copy is the database as of this instant
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal
    report = _checked(partial)
    partial.rename(target)
    return BackupReport(target, report.sessions, report.messages, target.stat().st_size)


def restore_sqlite(backup: Path, database: Path) -> Path | None:
    """Replace ``database`` with ``backup`` after checking it; returns where the database it
    replaced was kept (None when there was none). The daemon must not be running."""
    if not backup.exists():
        raise BackupError(f"no backup at {backup}")
    _checked(backup)
    kept: Path | None = None
    if database.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        kept = database.with_name(f"{database.name}.before-restore-{stamp}")
        backup_sqlite(database, kept)
    database.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(backup)) as source:
        with contextlib.closing(sqlite3.connect(database)) as target:
            source.backup(target)
    return kept


def _checked(path: Path) -> BackupReport:
    """The backup's contents, after ``PRAGMA integrity_check`` and a look for the store's
    tables; raises BackupError otherwise."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            missing = [name for name in REQUIRED_TABLES if name not in tables]
            if integrity != "ok" or missing:
                problem = f"integrity check: {integrity}" if integrity != "ok" else ""
                problem = problem or f"not a Hermes database (no {', '.join(missing)} table)"
                raise BackupError(f"{path}: {problem}")
            sessions = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
            messages = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{path}: not a SQLite database ({exc})") from exc
    return BackupReport(path, sessions, messages, path.stat().st_size)
