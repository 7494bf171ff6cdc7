"""SQLite URLs are read as SQLAlchemy reads them, without importing it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from gateway.store.locations import sqlite_path

URLS = [
    "sqlite:///relative.db",
    "sqlite:////absolute/dir/hermes.db",
    "sqlite+aiosqlite:///~/home/hermes.db",
    "sqlite+pysqlite:///x.db?timeout=5",
    "sqlite:///a%20b.db?mode=ro",
    "sqlite://",
    "sqlite:///:memory:",
    "postgresql://user:secret@host/hermes",
    "postgresql+asyncpg://host/hermes",
]


@pytest.mark.parametrize("url", URLS)
def test_sqlite_path_agrees_with_sqlalchemy(url: str) -> None:
    parsed = make_url(url)
    is_file = parsed.drivername.startswith("sqlite") and parsed.database not in (
        None,
        "",
        ":memory:",
    )
    expected = Path(str(parsed.database)).expanduser() if is_file else None
    assert sqlite_path(url) == expected
