"""Messages carry the platform's time: ``messages.sent_at`` (epoch seconds, nullable).

The context policy decides on message times (Telegram ``date``, Discord ``created_at``), never
the wall clock, so a replayed transcript decides as the live run did. Older rows have none.

Revision ID: 0003_message_times
Revises: 0002
Create Date: 2026-12-03 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_message_times"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the nullable ``sent_at`` column to ``messages``."""
    # A plain ADD COLUMN (no batch copy of the table): the lcm revision's triggers on
    # ``messages`` must survive on SQLite.
    op.add_column("messages", sa.Column("sent_at", sa.Float(), nullable=True))


def downgrade() -> None:
    """Drop ``messages.sent_at``."""
    op.drop_column("messages", "sent_at")
