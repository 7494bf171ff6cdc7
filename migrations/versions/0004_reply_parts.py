"""Replies and their parts, tied to every inbound message they answer (exactly-once delivery).

A reply is planned (all its parts, in order) before the first part is sent; each part gets its
platform id as it is sent. Every inbound message of a turn points at the turn's stored user
message and at its reply, so a restart resumes a merged turn as one and sends only the parts
still missing. ``inbound.failure`` says why a message ended ``failed``.

Revision ID: 0004_reply_parts
Revises: 0003_message_times
Create Date: 2026-12-03 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_reply_parts"
down_revision: str | Sequence[str] | None = "0003_message_times"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create replies and reply_parts; give inbound its links and a failure reason."""
    op.create_table(
        "replies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("session_key", sa.String(), nullable=False),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("thread_id", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("closes_as", sa.String(), nullable=False),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_replies")),
    )
    op.create_table(
        "reply_parts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("reply_id", sa.Integer(), nullable=False),
        sa.Column("part_index", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("platform_message_id", sa.String(), nullable=True),
        sa.Column("sent_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(
            ["reply_id"], ["replies.id"], name=op.f("fk_reply_parts_reply_id_replies")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reply_parts")),
        sa.UniqueConstraint(
            "reply_id", "part_index", name=op.f("uq_reply_parts_reply_id_part_index")
        ),
    )
    # Plain columns (no foreign keys): SQLite would have to rebuild the inbound table for one.
    op.add_column("inbound", sa.Column("user_message_id", sa.Integer(), nullable=True))
    op.add_column("inbound", sa.Column("reply_id", sa.Integer(), nullable=True))
    op.add_column("inbound", sa.Column("failure", sa.Text(), nullable=True))
    op.create_index(op.f("ix_inbound_reply_id"), "inbound", ["reply_id"])


def downgrade() -> None:
    """Drop the reply tables and inbound's links."""
    op.drop_index(op.f("ix_inbound_reply_id"), table_name="inbound")
    for column in ("failure", "reply_id", "user_message_id"):
        op.drop_column("inbound", column)
    op.drop_table("reply_parts")
    op.drop_table("replies")
