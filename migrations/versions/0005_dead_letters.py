"""Quarantined updates: what a platform sent that could not be parsed or recorded.

``raw`` is the update as ASCII JSON (lone surrogates and NULs as escapes, so any update fits),
``reason`` the short cause that is also logged, ``detail`` the error text (never logged).

Revision ID: 0005_dead_letters
Revises: 0004_reply_parts
Create Date: 2026-12-03 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_dead_letters"
down_revision: str | Sequence[str] | None = "0004_reply_parts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the dead-letter table."""
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("ref", sa.String(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("raw", sa.Text(), nullable=False),
        sa.Column("received_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dead_letters")),
    )
    op.create_index(op.f("ix_dead_letters_platform"), "dead_letters", ["platform"])


def downgrade() -> None:
    """Drop the dead-letter table."""
    op.drop_index(op.f("ix_dead_letters_platform"), table_name="dead_letters")
    op.drop_table("dead_letters")
