"""The initial schema: sessions, messages, api_usage, compactions, inbound.

Revision ID: 0001
Revises:
Create Date: 2025-01-01 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revisions describe their own columns instead of importing gateway.store.tables, so later
# changes to the models never rewrite history.
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create every table of the store."""
    _create_sessions()
    _create_messages()
    _create_api_usage()
    _create_compactions()
    _create_inbound()


def downgrade() -> None:
    """Drop every table of the store."""
    for table in ("inbound", "compactions", "api_usage", "messages", "sessions"):
        op.drop_table(table)


def _create_sessions() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=True),
        sa.Column("title", sa.String(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("engine", sa.String(), nullable=False),
        sa.Column("engine_state", sa.JSON(), nullable=False),
        sa.Column("previous_summary", sa.Text(), nullable=True),
        sa.Column("compression_count", sa.Integer(), nullable=False),
        sa.Column("last_prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("compaction_cooldown_until", TIMESTAMP, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
    )
    op.create_index(op.f("ix_sessions_key"), "sessions", ["key"])
    op.create_index(
        "ix_sessions_one_active_per_key",
        "sessions",
        ["key"],
        unique=True,
        sqlite_where=sa.text("active"),
        postgresql_where=sa.text("active"),
    )


def _create_messages() -> None:
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("content", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("tool_calls", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("tool_call_id", sa.String(), nullable=True),
        sa.Column("extra", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("in_context", sa.Boolean(), nullable=False),
        sa.Column("ctx_pos", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("platform_message_id", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_messages_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
    )
    op.create_index(
        "ix_messages_session_context", "messages", ["session_id", "in_context", "ctx_pos"]
    )
    op.create_index("ix_messages_session_order", "messages", ["session_id", "id"])
    op.create_index(
        "ix_messages_one_per_ctx_pos",
        "messages",
        ["session_id", "ctx_pos"],
        unique=True,
        sqlite_where=sa.text("in_context"),
        postgresql_where=sa.text("in_context"),
    )


def _create_api_usage() -> None:
    op.create_table(
        "api_usage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("purpose", sa.String(), nullable=False),
        sa.Column("provider", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cache_read_tokens", sa.Integer(), nullable=False),
        sa.Column("cache_write_tokens", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_api_usage_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_usage")),
    )
    op.create_index(op.f("ix_api_usage_session_id"), "api_usage", ["session_id"])


def _create_compactions() -> None:
    op.create_table(
        "compactions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(), nullable=False),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.Column("degraded", sa.Boolean(), nullable=False),
        sa.Column("first_message_id", sa.Integer(), nullable=True),
        sa.Column("last_message_id", sa.Integer(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("summary_message_id", sa.Integer(), nullable=True),
        sa.Column("tokens_before", sa.Integer(), nullable=False),
        sa.Column("tokens_after", sa.Integer(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_compactions_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compactions")),
    )
    op.create_index(op.f("ix_compactions_session_id"), "compactions", ["session_id"])


def _create_inbound() -> None:
    op.create_table(
        "inbound",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("platform_message_id", sa.String(), nullable=False),
        sa.Column("session_key", sa.String(), nullable=False),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("reply_platform_ids", sa.JSON(), nullable=False),
        sa.Column("received_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbound")),
        sa.UniqueConstraint(
            "platform",
            "platform_message_id",
            name=op.f("uq_inbound_platform_platform_message_id"),
        ),
    )
    op.create_index("ix_inbound_status_received", "inbound", ["status", "received_at"])
