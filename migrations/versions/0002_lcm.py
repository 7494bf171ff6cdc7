"""Tables of the lossless context engine (plugins/context_engine/lcm): summary nodes, their
children, and full-text search over messages and summaries.

SQLite gets FTS5 tables kept in step by triggers (messages are indexed as they are inserted,
existing ones once here); PostgreSQL gets GIN indexes on ``to_tsvector('simple', ...)``
expressions that the engine's queries repeat exactly.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)

# The searchable text of a stored message: string content unwrapped from its JSON, other
# content and tool calls as their JSON text.
_SQLITE_MESSAGE_TEXT = """trim(
    coalesce(CASE WHEN json_valid(new.content) AND json_type(new.content) = 'text'
             THEN json_extract(new.content, '$') ELSE new.content END, '')
    || ' ' || coalesce(new.tool_calls, ''))"""

_SQLITE_UP = [
    "CREATE VIRTUAL TABLE lcm_messages_fts USING fts5(body, "
    "tokenize='unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE lcm_nodes_fts USING fts5(content, content='lcm_nodes', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    f"""CREATE TRIGGER lcm_messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO lcm_messages_fts(rowid, body) VALUES (new.id, {_SQLITE_MESSAGE_TEXT});
    END""",
    """CREATE TRIGGER lcm_nodes_fts_insert AFTER INSERT ON lcm_nodes BEGIN
        INSERT INTO lcm_nodes_fts(rowid, content) VALUES (new.id, new.content);
    END""",
    """CREATE TRIGGER lcm_nodes_fts_delete AFTER DELETE ON lcm_nodes BEGIN
        INSERT INTO lcm_nodes_fts(lcm_nodes_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    END""",
    f"""INSERT INTO lcm_messages_fts(rowid, body)
        SELECT new.id, {_SQLITE_MESSAGE_TEXT} FROM messages AS new""",
]
_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS lcm_nodes_fts_delete",
    "DROP TRIGGER IF EXISTS lcm_nodes_fts_insert",
    "DROP TRIGGER IF EXISTS lcm_messages_fts_insert",
    "DROP TABLE IF EXISTS lcm_nodes_fts",
    "DROP TABLE IF EXISTS lcm_messages_fts",
]
_POSTGRES_UP = [
    "CREATE INDEX ix_lcm_nodes_fts ON lcm_nodes USING GIN (to_tsvector('simple', content))",
    "CREATE INDEX ix_lcm_messages_fts ON messages "
    "USING GIN (to_tsvector('simple', coalesce(content::text, '')))",
]
_POSTGRES_DOWN = [
    "DROP INDEX IF EXISTS ix_lcm_messages_fts",
    "DROP INDEX IF EXISTS ix_lcm_nodes_fts",
]


def upgrade() -> None:
    """Create the node tables, then the dialect's full-text search."""
    op.create_table(
        "lcm_nodes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("session_id", sa.Integer(), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("level", sa.Integer(), nullable=False),
        sa.Column("first_message_id", sa.Integer(), nullable=False),
        sa.Column("last_message_id", sa.Integer(), nullable=False),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("first_at", TIMESTAMP, nullable=False),
        sa.Column("last_at", TIMESTAMP, nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("source_tokens", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("completed_items", sa.Text(), nullable=False),
        sa.Column("open_items", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.Column("parent_id", sa.Integer(), sa.ForeignKey("lcm_nodes.id"), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
    op.create_index("ix_lcm_nodes_session_first", "lcm_nodes", ["session_id", "first_message_id"])
    op.create_table(
        "lcm_node_children",
        sa.Column("parent_id", sa.Integer(), sa.ForeignKey("lcm_nodes.id"), primary_key=True),
        sa.Column("child_id", sa.Integer(), sa.ForeignKey("lcm_nodes.id"), primary_key=True),
        sa.Column("position", sa.Integer(), nullable=False),
    )
    dialect = op.get_bind().dialect.name
    for statement in {"sqlite": _SQLITE_UP, "postgresql": _POSTGRES_UP}.get(dialect, []):
        op.execute(statement)


def downgrade() -> None:
    """Drop the search structures and the node tables."""
    dialect = op.get_bind().dialect.name
    for statement in {"sqlite": _SQLITE_DOWN, "postgresql": _POSTGRES_DOWN}.get(dialect, []):
        op.execute(statement)
    op.drop_table("lcm_node_children")
    op.drop_index("ix_lcm_nodes_session_first", table_name="lcm_nodes")
    op.drop_table("lcm_nodes")
