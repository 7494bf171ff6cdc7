"""Attachments: what a message carried (photo, document), its blob and the platform's data.

The bytes live once in the blob folder (``media.blob_dir``), named by their SHA-256; a row here
ties a message to one of them with the platform's file id, MIME type, size and dimensions or
page count. The message's content keeps the same reference, without the bytes.

Revision ID: 0007_attachments
Revises: 0006_spend
Create Date: 2026-12-04 00:00:00+00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_attachments"
down_revision: str | Sequence[str] | None = "0006_spend"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the attachments table."""
    op.create_table(
        "attachments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("mime_type", sa.String(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("pages", sa.Integer(), nullable=True),
        sa.Column("file_name", sa.String(), nullable=True),
        sa.Column("platform_file_id", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["messages.id"],
            name=op.f("fk_attachments_message_id_messages"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachments")),
    )
    op.create_index(op.f("ix_attachments_message_id"), "attachments", ["message_id"])
    op.create_index(op.f("ix_attachments_sha256"), "attachments", ["sha256"])


def downgrade() -> None:
    """Drop the attachments table."""
    op.drop_index(op.f("ix_attachments_sha256"), table_name="attachments")
    op.drop_index(op.f("ix_attachments_message_id"), table_name="attachments")
    op.drop_table("attachments")
