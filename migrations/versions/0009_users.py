"""Users: who an admin allowed or denied at run time, and whose turn each model call was.

``user_access``: one row per user an admin allowed or denied (``/allow``, ``/deny``, ``hermes
users``), by user id or by username (lower case, no ``@``); it overrides ``allowed_users``
from the config. ``api_usage.user_key``: ``platform:user_id`` of the user whose message the
call answered (null for older rows and calls outside a turn), for per-user usage and budgets.

Revision ID: 0009_users
Revises: 0008_session_model
Create Date: 2026-12-04 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_users"
down_revision: str | Sequence[str] | None = "0008_session_model"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the table, add the column and its index."""
    op.create_table(
        "user_access",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=True),
        sa.Column("username", sa.String(), nullable=True),
        sa.Column("access", sa.String(), nullable=False),
        sa.Column("set_by", sa.String(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_access")),
    )
    op.create_index(op.f("ix_user_access_platform"), "user_access", ["platform"])
    op.add_column("api_usage", sa.Column("user_key", sa.String(), nullable=True))
    op.create_index("ix_api_usage_user_key_created_at", "api_usage", ["user_key", "created_at"])


def downgrade() -> None:
    """Drop them."""
    op.drop_index("ix_api_usage_user_key_created_at", table_name="api_usage")
    with op.batch_alter_table("api_usage") as batch:
        batch.drop_column("user_key")
    op.drop_index(op.f("ix_user_access_platform"), table_name="user_access")
    op.drop_table("user_access")
