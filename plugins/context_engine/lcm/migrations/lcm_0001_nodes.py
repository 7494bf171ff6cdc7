"""The lossless engine's own tables: summary nodes, their children, and full-text search over
the nodes (SQLite: an FTS5 table kept in step by triggers; PostgreSQL: a GIN index on the
``to_tsvector('simple', content)`` expression the engine's search repeats exactly).

A database made before these tables moved out of the core migrations already has them (core
revision 0002 used to create them): then this revision creates nothing and is only recorded.

Revision ID: lcm_0001
Revises: (the start of the plugin's own chain; runs after the core revisions)
Create Date: 2026-12-04 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "lcm_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)

_SEARCH_UP = {
    "sqlite": [
        "CREATE VIRTUAL TABLE lcm_nodes_fts USING fts5(content, content='lcm_nodes', "
        "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
        """CREATE TRIGGER lcm_nodes_fts_insert AFTER INSERT ON lcm_nodes BEGIN
            INSERT INTO lcm_nodes_fts(rowid, content) VALUES (new.id, new.content);
        END""",
        """CREATE TRIGGER lcm_nodes_fts_delete AFTER DELETE ON lcm_nodes BEGIN
            INSERT INTO lcm_nodes_fts(lcm_nodes_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
        END""",
    ],
    "postgresql": [
        "CREATE INDEX ix_lcm_nodes_fts ON lcm_nodes USING GIN (to_tsvector('simple', content))",
    ],
}
"""The search over nodes, by dialect."""
_SEARCH_DOWN = {
    "sqlite": [
        "DROP TRIGGER IF EXISTS lcm_nodes_fts_delete",
        "DROP TRIGGER IF EXISTS lcm_nodes_fts_insert",
        "DROP TABLE IF EXISTS lcm_nodes_fts",
    ],
    "postgresql": ["DROP INDEX IF EXISTS ix_lcm_nodes_fts"],
}


def upgrade() -> None:
    """Create the node tables and the dialect's search over them, unless already there."""
    bind = op.get_bind()
    if sa.inspect(bind).has_table("lcm_nodes"):
        return
    _create_node_tables()
    for statement in _SEARCH_UP.get(bind.dialect.name, []):
        op.execute(statement)


def downgrade() -> None:
    """Drop the search over nodes, then the node tables."""
    for statement in _SEARCH_DOWN.get(op.get_bind().dialect.name, []):
        op.execute(statement)
    op.drop_table("lcm_node_children")
    op.drop_index("ix_lcm_nodes_session_first", table_name="lcm_nodes")
    op.drop_table("lcm_nodes")


def _create_node_tables() -> None:
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
