"""Whether a database is already at the newest schema, without importing alembic.

Importing alembic and reading its script directory costs more than the rest of a CLI command,
and nearly every start-up finds the database already up to date. The head revisions are read
here straight from the revision files (their literal ``revision`` and ``down_revision``) in
every version location, so several heads (branches, a plugin's own chain) are handled, and
compared with the rows of the database's ``alembic_version`` table. Anything unusual (a value
that is not a literal, no revision files) answers "unknown", and the caller runs alembic.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

# SQLAlchemy is imported only where a database is asked (database_heads): reading the revision
# files must stay cheap for the quick SQLite listings (gateway/store/sqlite_listing.py).

VERSION_TABLE = "alembic_version"


def _literal_assignments(path: Path) -> dict[str, object] | None:
    """Top-level ``name = <literal>`` assignments of a revision file; None if unreadable."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    found: dict[str, object] = {}
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
            try:
                found[target.id] = ast.literal_eval(value) if value is not None else None
            except ValueError:
                return None
    return found


def _down_revisions(value: object) -> tuple[str, ...] | None:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def script_heads(locations: Iterable[Path]) -> frozenset[str] | None:
    """The head revisions of the revision files in ``locations``; None when unsure."""
    parents: dict[str, tuple[str, ...]] = {}
    for location in locations:
        for path in sorted(location.glob("*.py")):
            if path.name.startswith("_"):
                continue
            found = _literal_assignments(path)
            if found is None or not isinstance(found.get("revision"), str):
                return None
            downs = _down_revisions(found.get("down_revision"))
            if downs is None:
                return None
            parents[str(found["revision"])] = downs
    if not parents:
        return None
    referenced = {parent for downs in parents.values() for parent in downs}
    return frozenset(revision for revision in parents if revision not in referenced)


async def database_heads(
    engine: AsyncEngine, version_table: str = VERSION_TABLE
) -> frozenset[str] | None:
    """The revisions recorded in ``version_table``; None when the table does not exist yet."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    try:
        async with engine.connect() as connection:
            rows = await connection.execute(text(f"SELECT version_num FROM {version_table}"))
            return frozenset(str(row[0]) for row in rows)
    except DBAPIError:
        return None


async def is_at_head(
    engine: AsyncEngine, locations: Iterable[Path], version_table: str = VERSION_TABLE
) -> bool:
    """Whether ``version_table`` records exactly the head revisions of ``locations`` (a
    plugin's own chain has a version table of its own, see
    :mod:`agent.engines.plugin_migrations`)."""
    heads = script_heads(locations)
    return heads is not None and await database_heads(engine, version_table) == heads
