"""Tool calls: one row per call the agent made (whose turn, which tool, when it started, how
long the tool ran, how it ended), for ``/usage`` and ``hermes usage``. Never the arguments or
the result. Indexed for one user's calls since a day (``user_key, started_at``), everyone's
since a day (``started_at``) and a session's (``session_id``).

Revision ID: 0016_tool_calls
Revises: 0015_mcp_tools
Create Date: 2026-12-05 08:30:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_tool_calls"
down_revision: str | Sequence[str] | None = "0015_mcp_tools"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the tool_calls table and its indexes."""
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("user_key", sa.String(), nullable=True),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=False),
        sa.Column("run_seconds", sa.Float(), nullable=True),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_calls")),
    )
    op.create_index("ix_tool_calls_user_key_started_at", "tool_calls", ["user_key", "started_at"])
    op.create_index("ix_tool_calls_started_at", "tool_calls", ["started_at"])
    op.create_index("ix_tool_calls_session_id", "tool_calls", ["session_id"])


def downgrade() -> None:
    """Drop the tool_calls table and its indexes."""
    op.drop_index("ix_tool_calls_session_id", table_name="tool_calls")
    op.drop_index("ix_tool_calls_started_at", table_name="tool_calls")
    op.drop_index("ix_tool_calls_user_key_started_at", table_name="tool_calls")
    op.drop_table("tool_calls")
