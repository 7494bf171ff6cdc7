"""The model a session talks to: ``sessions.model``, set by ``/model``.

Null means the configured ``model.name``, so older sessions (and every session until someone
switches) follow the configuration as before.

Revision ID: 0008_session_model
Revises: 0007_attachments
Create Date: 2026-12-04 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_session_model"
down_revision: str | Sequence[str] | None = "0007_attachments"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the column (plain ADD COLUMN, no batch copy of the table)."""
    op.add_column("sessions", sa.Column("model", sa.String(), nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("model")
