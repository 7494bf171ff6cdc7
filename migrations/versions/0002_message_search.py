"""Full-text search over stored messages (what ``MessageArchive.search_messages`` runs on).

SQLite gets the FTS5 table ``lcm_messages_fts``, kept in step with ``messages`` by an insert
trigger (existing rows are indexed once here); PostgreSQL gets a GIN index on the
``to_tsvector('simple', ...)`` expression the store's search repeats exactly. The ``lcm_``
names are historical: this revision once also created the lossless engine's own tables, which
now come from that plugin's own chain (``plugins/context_engine/lcm/migrations/``); a database
made by the old revision keeps them, and the plugin's first revision finds them there.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The searchable text of a stored message: string content unwrapped from its JSON, other
# content and tool calls as their JSON text.
_SQLITE_MESSAGE_TEXT = """trim(
    coalesce(CASE WHEN json_valid(new.content) AND json_type(new.content) = 'text'
             THEN json_extract(new.content, '$') ELSE new.content END, '')
    || ' ' || coalesce(new.tool_calls, ''))"""

_SQLITE_UP = [
    "CREATE VIRTUAL TABLE lcm_messages_fts USING fts5(body, "
    "tokenize='unicode61 remove_diacritics 2')",
    f"""CREATE TRIGGER lcm_messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO lcm_messages_fts(rowid, body) VALUES (new.id, {_SQLITE_MESSAGE_TEXT});
    END""",
    f"""INSERT INTO lcm_messages_fts(rowid, body)
        SELECT new.id, {_SQLITE_MESSAGE_TEXT} FROM messages AS new""",
]
_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS lcm_messages_fts_insert",
    "DROP TABLE IF EXISTS lcm_messages_fts",
]
_POSTGRES_UP = [
    "CREATE INDEX ix_lcm_messages_fts ON messages "
    "USING GIN (to_tsvector('simple', coalesce(content::text, '')))",
]
_POSTGRES_DOWN = [
    "DROP INDEX IF EXISTS ix_lcm_messages_fts",
]


def upgrade() -> None:
    """Create the dialect's full-text search over messages."""
    dialect = op.get_bind().dialect.name
    for statement in {"sqlite": _SQLITE_UP, "postgresql": _POSTGRES_UP}.get(dialect, []):
        op.execute(statement)


def downgrade() -> None:
    """Drop the search structures."""
    dialect = op.get_bind().dialect.name
    for statement in {"sqlite": _SQLITE_DOWN, "postgresql": _POSTGRES_DOWN}.get(dialect, []):
        op.execute(statement)
