"""Where the database and its schema's revision files are, importable without SQLAlchemy.

The migration runner (gateway/store/db.py) and the quick read-only SQLite listings
(gateway/store/sqlite_listing.py) must agree on the database file and on the revision files
a database is compared with; neither question needs SQLAlchemy or alembic to answer.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from urllib.parse import unquote

from gateway.settings.home import DATABASE_FILE_NAME as DATABASE_FILE_NAME
from gateway.settings.home import default_database_url as default_database_url


def _migrations_dir() -> Path:
    """The ``migrations`` package's folder, found without importing it (its ``env.py`` imports
    the store; the store must not import it back). Search locations rather than ``__file__``:
    an editable install may expose the package as a namespace."""
    spec = importlib.util.find_spec("migrations")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the migrations package is not installed beside the gateway")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


MIGRATIONS_DIR = _migrations_dir()
"""The alembic script directory (``migrations/``), wherever the package is installed."""
VERSION_LOCATIONS = (MIGRATIONS_DIR / "versions",)
"""Every directory holding revision files: alembic reads these, and so does the quick
"already at head" check at start-up (add a plugin's own revision directory here)."""

_SQLITE_URL = re.compile(r"sqlite(?:\+[A-Za-z0-9_]+)?://(?:/([^?]*))?(?:\?.*)?", re.DOTALL)
"""``sqlite[+driver]://[/path][?query]``: SQLAlchemy's form of a SQLite URL."""


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
