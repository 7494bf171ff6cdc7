"""Where the daemon keeps its files: ``$HERMES_HOME``, else ``~/.hermes``.

Read from the environment, below the configuration schema: the store finds a home's plugin
folders here, the configuration its default database, the CLI its lock and history files.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HERMES_HOME = "~/.hermes"
"""The home when ``HERMES_HOME`` is not set."""


def hermes_home() -> Path:
    """``$HERMES_HOME``, else ``~/.hermes``."""
    return Path(os.environ.get("HERMES_HOME") or os.path.expanduser(DEFAULT_HERMES_HOME))


DATABASE_FILE_NAME = "hermes.db"
"""The SQLite file under ``$HERMES_HOME`` when ``database.url`` is not configured."""


def default_database_url(home: Path) -> str:
    """The SQLite URL used when no ``database.url`` is configured: ``<home>/hermes.db``."""
    return f"sqlite+aiosqlite:///{home.expanduser() / DATABASE_FILE_NAME}"
