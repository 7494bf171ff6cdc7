"""Voice replies: each chat's ``/voice`` mode, the characters spoken per answer (usage, the
daily cap), and a reply part that is a voice message (its audio's blob, seconds, waveform).

Revision ID: 0018_voice_replies
Revises: 0016_tool_calls
Create Date: 2026-12-06 02:40:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_voice_replies"
down_revision: str | Sequence[str] | None = "0016_tool_calls"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create chat_voice and speech_usage; add reply_parts.voice."""
    op.create_table(
        "chat_voice",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(), nullable=False),
        sa.Column("chat_id", sa.String(), nullable=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chat_voice")),
        sa.UniqueConstraint("platform", "chat_id", name=op.f("uq_chat_voice_platform_chat_id")),
    )
    op.create_table(
        "speech_usage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_key", sa.String(), nullable=True),
        sa.Column("session_key", sa.String(), nullable=False),
        sa.Column("provider", sa.String(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_speech_usage")),
    )
    op.create_index(
        "ix_speech_usage_user_key_created_at", "speech_usage", ["user_key", "created_at"]
    )
    op.create_index("ix_speech_usage_created_at", "speech_usage", ["created_at"])
    with op.batch_alter_table("reply_parts") as batch:
        batch.add_column(sa.Column("voice", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop reply_parts.voice, speech_usage and chat_voice."""
    with op.batch_alter_table("reply_parts") as batch:
        batch.drop_column("voice")
    op.drop_index("ix_speech_usage_created_at", table_name="speech_usage")
    op.drop_index("ix_speech_usage_user_key_created_at", table_name="speech_usage")
    op.drop_table("speech_usage")
    op.drop_table("chat_voice")
