"""Live messages: the platform messages a reply was shown in while the model wrote it.

A live reply (``platforms.<name>.streaming``) sends a message before the reply is planned and
edits it as the answer grows; each such message is recorded here, right after its send and
before its first edit, under the inbound message the reply answers (``anchor``). Delivery and
a restart find them here and finish them (edited to the final text), so a crash mid-stream
never leaves a partial message beside a second copy.

Revision ID: 0010_streaming
Revises: 0009_users
Create Date: 2026-12-04 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_streaming"
down_revision: str | Sequence[str] | None = "0009_users"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the live-message table."""
    op.create_table(
        "live_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("anchor", sa.String(), nullable=False),
        sa.Column("part_index", sa.Integer(), nullable=False),
        sa.Column("platform_message_id", sa.String(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_live_messages")),
        sa.UniqueConstraint(
            "platform",
            "chat_id",
            "anchor",
            "part_index",
            name=op.f("uq_live_messages_platform_chat_id_anchor_part_index"),
        ),
    )


def downgrade() -> None:
    """Drop the live-message table."""
    op.drop_table("live_messages")
