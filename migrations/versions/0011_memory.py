"""Memory: short entries the bot keeps for one user, or for one group chat, across sessions.

``scope`` is ``user`` (``owner_id`` is the user's platform id) or ``chat`` (a group chat's id);
every read and write names its owner, so one person's entries never reach another.

Revision ID: 0011_memory
Revises: 0010_streaming
Create Date: 2026-12-05 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_memory"
down_revision: str | Sequence[str] | None = "0010_streaming"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the memories table, indexed by owner."""
    op.create_table(
        "memories",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("owner_id", sa.String(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memories")),
    )
    op.create_index("ix_memories_owner", "memories", ["scope", "platform", "owner_id"])


def downgrade() -> None:
    """Drop the memories table."""
    op.drop_index("ix_memories_owner", table_name="memories")
    op.drop_table("memories")
