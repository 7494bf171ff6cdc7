"""Where a context-engine plugin keeps the schema of its own tables: the plugin's migrations.

A plugin folder ``plugins/context_engine/<name>/`` (in the project or under ``$HERMES_HOME``)
may hold a ``migrations/`` folder of alembic revision files: a chain of its own (its first
revision has ``down_revision = None``), recorded in a version table of its own,
``alembic_version_<name>``, so the core's ``alembic_version`` keeps one row and the core chain
carries only core schema. The host runs every plugin chain it finds after its core revisions,
each time the store is opened (:func:`gateway.store.db.open_store`); core revisions come first,
so a plugin's tables may refer to core tables (``sessions.id``) without a cross-chain
``depends_on``.

Every plugin folder's chain is run, whether its engine is selected or not: the database's
schema never depends on the configuration, and switching engines back and forth never leaves a
recorded revision the next start cannot find. Discovery reads folder names only; revision
files are imported by alembic when a chain is behind, never plugin code itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PLUGIN_SUBDIR = Path("plugins") / "context_engine"
"""Where engine plugin folders live, under the project root and under ``$HERMES_HOME``."""
MIGRATIONS_SUBDIR = "migrations"
"""The folder of a plugin's own revision files, inside the plugin's folder."""
VERSION_TABLE_PREFIX = "alembic_version_"


@dataclass(frozen=True, slots=True)
class PluginMigrations:
    """One plugin's migration chain: the engine's name and the folder of its revisions."""

    name: str
    location: Path

    @property
    def version_table(self) -> str:
        """The table recording how far this chain has run (``alembic_version_<name>``)."""
        return VERSION_TABLE_PREFIX + re.sub(r"\W", "_", self.name)


def find_plugin_migrations(roots: Iterable[Path]) -> list[PluginMigrations]:
    """The migration chains of the plugin folders under ``roots`` (project root, then
    ``$HERMES_HOME``), one per engine name, the first root winning as the engine loader does."""
    found: dict[str, PluginMigrations] = {}
    for root in roots:
        base = root / PLUGIN_SUBDIR
        if not base.is_dir():
            continue
        for folder in sorted(base.iterdir()):
            location = folder / MIGRATIONS_SUBDIR
            if (folder / "__init__.py").is_file() and _has_revisions(location):
                found.setdefault(folder.name, PluginMigrations(folder.name, location))
    return list(found.values())


def _has_revisions(location: Path) -> bool:
    return location.is_dir() and any(
        not path.name.startswith("_") for path in location.glob("*.py")
    )
