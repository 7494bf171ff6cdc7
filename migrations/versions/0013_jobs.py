"""Scheduled jobs and each user's time zone.

A job is a prompt run as an agent turn at its time (``kind`` once or cron), in the chat that
created it. It is claimed by one conditional update (status and ``next_run_at`` as read), which
in the same commit records the run as an inbound message, so a run happens once even across a
crash. ``user_settings`` keeps a user's time zone (UTC until set).

Revision ID: 0013_jobs
Revises: 0011_memory
Create Date: 2026-12-05 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_jobs"
down_revision: str | Sequence[str] | None = "0011_memory"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the jobs and user_settings tables."""
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("username", sa.String(), nullable=True),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("thread_id", sa.String(), nullable=True),
        sa.Column("chat_type", sa.String(), nullable=False),
        sa.Column("session_key", sa.String(), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("cron", sa.String(), nullable=True),
        sa.Column("time_zone", sa.String(), nullable=False),
        sa.Column("next_run_at", TIMESTAMP, nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("own_session", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("last_run_at", TIMESTAMP, nullable=True),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_index("ix_jobs_due", "jobs", ["status", "next_run_at"])
    op.create_index("ix_jobs_owner", "jobs", ["platform", "user_id"])
    op.create_table(
        "user_settings",
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("time_zone", sa.String(), nullable=True),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("platform", "user_id", name=op.f("pk_user_settings")),
    )


def downgrade() -> None:
    """Drop the jobs and user_settings tables."""
    op.drop_table("user_settings")
    op.drop_index("ix_jobs_owner", table_name="jobs")
    op.drop_index("ix_jobs_due", table_name="jobs")
    op.drop_table("jobs")
