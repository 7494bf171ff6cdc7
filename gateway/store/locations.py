"""Where the database and its schema's revision files are, importable without SQLAlchemy.

The migration runner (gateway/store/db.py) and the quick read-only SQLite listings
(gateway/store/sqlite_listing.py) must agree on the database file and on the revision files
a database is compared with; neither question needs SQLAlchemy or alembic to answer.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

import migrations
from gateway.config.schema import hermes_home

if TYPE_CHECKING:
    from gateway.config.schema import Config

DATABASE_FILE_NAME = "hermes.db"
"""The SQLite file under ``$HERMES_HOME`` when ``database.url`` is not configured."""

# __path__ rather than __file__: an editable install may expose the package as a namespace.
MIGRATIONS_DIR = Path(next(iter(migrations.__path__))).resolve()
"""The alembic script directory (``migrations/``), wherever the package is installed."""
VERSION_LOCATIONS = (MIGRATIONS_DIR / "versions",)
"""Every directory holding revision files: alembic reads these, and so does the quick
"already at head" check at start-up (add a plugin's own revision directory here)."""

_SQLITE_URL = re.compile(r"sqlite(?:\+[A-Za-z0-9_]+)?://(?:/([^?]*))?(?:\?.*)?", re.DOTALL)
"""``sqlite[+driver]://[/path][?query]``: SQLAlchemy's form of a SQLite URL."""


def default_database_url(home: Path) -> str:
    """The SQLite URL used when no ``database.url`` is configured: ``<home>/hermes.db``."""
    return f"sqlite+aiosqlite:///{home.expanduser() / DATABASE_FILE_NAME}"


def database_url(config: Config) -> str:
    """The configured ``database.url``, else SQLite under ``$HERMES_HOME``."""
    return config.database.url or default_database_url(hermes_home())


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL; None for other databases (or in-memory SQLite).

    Reads the URL as SQLAlchemy's ``make_url`` does (``sqlite:///relative``,
    ``sqlite:////absolute``, a driver, a query string), without importing it."""
    match = _SQLITE_URL.fullmatch(url.strip())
    if match is None:
        return None
    database = unquote(match.group(1) or "")
    if database in ("", ":memory:"):
        return None
    return Path(database).expanduser()
