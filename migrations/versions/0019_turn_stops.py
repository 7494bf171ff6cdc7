"""Turn stops: one row per turn the agent ended before its answer because it reached the step
limit (``agent.max_iterations``), for ``/usage`` and ``hermes usage``. Indexed for one user's
stops since a day (``user_key, stopped_at``) and everyone's (``stopped_at``).

Revision ID: 0019_turn_stops
Revises: 0018_voice_replies
Create Date: 2026-12-06 03:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_turn_stops"
down_revision: str | Sequence[str] | None = "0018_voice_replies"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the turn_stops table and its indexes."""
    op.create_table(
        "turn_stops",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("user_key", sa.String(), nullable=True),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("stopped_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_turn_stops")),
    )
    op.create_index("ix_turn_stops_user_key_stopped_at", "turn_stops", ["user_key", "stopped_at"])
    op.create_index("ix_turn_stops_stopped_at", "turn_stops", ["stopped_at"])


def downgrade() -> None:
    """Drop the turn_stops table and its indexes."""
    op.drop_index("ix_turn_stops_stopped_at", table_name="turn_stops")
    op.drop_index("ix_turn_stops_user_key_stopped_at", table_name="turn_stops")
    op.drop_table("turn_stops")
