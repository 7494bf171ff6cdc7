"""Where the money went: usage rows say whether they opened a visit and how many of their cache
writes were on the 1-hour tier; policy compactions keep the saving their decision estimated.

``api_usage.visit_start``: the first model call of a turn that found the prompt cache cold (the
whole prefix written again). ``api_usage.cache_write_1h_tokens``: the writes priced at 2x.
``compactions.estimated_saving_usd`` / ``estimated_cost_usd``: the context policy's estimate
of the prompt cost saved over the visit and of the summary's cost (``cold_start``, ``idle``;
null for the fixed triggers). Older rows read as not at a visit start, 5-minute writes, no
estimate.

Revision ID: 0006_spend
Revises: 0005_dead_letters
Create Date: 2026-12-03 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_spend"
down_revision: str | Sequence[str] | None = "0005_dead_letters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the columns (plain ADD COLUMN, no batch copy of the tables)."""
    op.add_column(
        "api_usage",
        sa.Column("visit_start", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "api_usage",
        sa.Column("cache_write_1h_tokens", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("compactions", sa.Column("estimated_saving_usd", sa.Float(), nullable=True))
    op.add_column("compactions", sa.Column("estimated_cost_usd", sa.Float(), nullable=True))


def downgrade() -> None:
    """Drop the columns."""
    op.drop_column("compactions", "estimated_cost_usd")
    op.drop_column("compactions", "estimated_saving_usd")
    op.drop_column("api_usage", "cache_write_1h_tokens")
    op.drop_column("api_usage", "visit_start")
