"""MCP tool lists: each server's last listing (names, order, schemas), so a restart with the
server down still offers the same tools and the cached prefix survives. Tool outputs: results
too large for the context, kept whole per session for the ``tool_output`` tool to page.

Revision ID: 0015_mcp_tools
Revises: 0014_approvals
Create Date: 2026-12-05 06:30:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_mcp_tools"
down_revision: str | Sequence[str] | None = "0014_approvals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the mcp_tool_lists table (one row per server) and the tool_outputs table."""
    op.create_table(
        "mcp_tool_lists",
        sa.Column("server", sa.String(), nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("server", name=op.f("pk_mcp_tool_lists")),
    )

    op.create_table(
        "tool_outputs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_outputs")),
    )
    op.create_index("ix_tool_outputs_session_id", "tool_outputs", ["session_id"])


def downgrade() -> None:
    """Drop the tool_outputs and mcp_tool_lists tables."""
    op.drop_index("ix_tool_outputs_session_id", table_name="tool_outputs")
    op.drop_table("tool_outputs")
    op.drop_table("mcp_tool_lists")
