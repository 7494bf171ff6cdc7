"""Tool approvals: the tools a chat allowed for good ("Always in this chat"), and the approval
prompts the bot sent (bot messages like reply parts: known to the probe for a part in doubt).

Revision ID: 0014_approvals
Revises: 0013_jobs
Create Date: 2026-12-05 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_approvals"
down_revision: str | Sequence[str] | None = "0013_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the tool_approvals and approval_prompts tables."""
    op.create_table(
        "tool_approvals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_approvals")),
        sa.UniqueConstraint(
            "platform", "chat_id", "tool", name=op.f("uq_tool_approvals_platform_chat_id_tool")
        ),
    )
    op.create_table(
        "approval_prompts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("platform_message_id", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("decision", sa.String(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approval_prompts")),
    )
    op.create_index("ix_approval_prompts_chat", "approval_prompts", ["platform", "chat_id"])


def downgrade() -> None:
    """Drop both tables."""
    op.drop_index("ix_approval_prompts_chat", table_name="approval_prompts")
    op.drop_table("approval_prompts")
    op.drop_table("tool_approvals")
