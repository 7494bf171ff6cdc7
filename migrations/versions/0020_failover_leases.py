"""Failover: the lease a group of gateways elects its leader with (``gateway_leases``: holder,
epoch, expiry by the database's clock) and the members seen (``gateway_members``: leader and
standbys, each heartbeating ``seen_at``), and the webhook inbox where a standby keeps the
Telegram updates it received for the leader (``webhook_inbox``). See
``gateway/store/leases.py`` and ``gateway/store/webhook_inbox.py``.

Revision ID: 0020_failover_leases
Revises: 0019_turn_stops
Create Date: 2026-12-06 05:30:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_failover_leases"
down_revision: str | Sequence[str] | None = "0019_turn_stops"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the gateway_leases, gateway_members and webhook_inbox tables."""
    op.create_table(
        "gateway_leases",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(), nullable=True),
        sa.Column("host", sa.String(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("backend_pid", sa.Integer(), nullable=True),
        sa.Column("takeovers", sa.Integer(), nullable=False),
        sa.Column("acquired_at", TIMESTAMP, nullable=True),
        sa.Column("renewed_at", TIMESTAMP, nullable=True),
        sa.Column("expires_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_gateway_leases")),
    )
    op.create_table(
        "gateway_members",
        sa.Column("member", sa.String(), nullable=False),
        sa.Column("host", sa.String(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=False),
        sa.Column("seen_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("member", name=op.f("pk_gateway_members")),
    )

    op.create_table(
        "webhook_inbox",
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("update_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("received_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("platform", "update_id", name=op.f("pk_webhook_inbox")),
    )


def downgrade() -> None:
    """Drop the three tables."""
    op.drop_table("webhook_inbox")
    op.drop_table("gateway_members")
    op.drop_table("gateway_leases")
