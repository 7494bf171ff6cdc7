"""The store's tables as SQLAlchemy 2 declarative models.

These models describe the schema for queries; the schema itself is created and changed only by
the alembic revisions in ``migrations/versions``, which must stay in step with this module (a
test compares the two). Only the repository modules import these classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Deterministic constraint names, so batch ALTERs on SQLite can find constraints again."""


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend.

    SQLite keeps no zone, so values are stored as naive UTC and given their zone back on load;
    PostgreSQL stores ``timestamptz``. Naive values are refused: they are always a bug here.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}; the store keeps timezone-aware UTC")
        utc_value = value.astimezone(UTC)
        # SQLite's DateTime type would drop the zone anyway; strip it so values compare as text.
        return utc_value.replace(tzinfo=None) if dialect.name == "sqlite" else utc_value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utcnow() -> datetime:
    """The current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


# ``none_as_null``: a Python None is stored as SQL NULL, not as the JSON literal ``null``.
NullableJSON = JSON(none_as_null=True)


class Base(DeclarativeBase):
    """Declarative base carrying the naming convention for every table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class SessionRow(Base):
    """One conversation. Per key (e.g. ``telegram:42``) exactly one session is active."""

    __tablename__ = "sessions"
    __table_args__ = (
        # At most one active session per key, enforced by the database itself.
        Index(
            "ix_sessions_one_active_per_key",
            "key",
            unique=True,
            sqlite_where=text("active"),
            postgresql_where=text("active"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String, index=True)
    platform: Mapped[str] = mapped_column(String)
    chat_id: Mapped[str] = mapped_column(String)
    user_id: Mapped[str | None] = mapped_column(String, nullable=True)
    title: Mapped[str | None] = mapped_column(String, nullable=True)
    active: Mapped[bool] = mapped_column(Boolean)
    engine: Mapped[str] = mapped_column(String)
    engine_state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    previous_summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    compression_count: Mapped[int] = mapped_column(Integer, default=0)
    last_prompt_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    compaction_cooldown_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    model: Mapped[str | None] = mapped_column(String, nullable=True)
    """The model chosen with ``/model``; None: the configured ``model.name``."""


class MessageRow(Base):
    """One chat-completions message. Never deleted; compaction only moves it out of context."""

    __tablename__ = "messages"
    __table_args__ = (
        Index("ix_messages_session_context", "session_id", "in_context", "ctx_pos"),
        Index("ix_messages_session_order", "session_id", "id"),
        # Each context position is held by one message: load_context's order is never ambiguous.
        Index(
            "ix_messages_one_per_ctx_pos",
            "session_id",
            "ctx_pos",
            unique=True,
            sqlite_where=text("in_context"),
            postgresql_where=text("in_context"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"))
    role: Mapped[str] = mapped_column(String)
    content: Mapped[Any] = mapped_column(NullableJSON, nullable=True)
    tool_calls: Mapped[Any] = mapped_column(NullableJSON, nullable=True)
    tool_call_id: Mapped[str | None] = mapped_column(String, nullable=True)
    extra: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    in_context: Mapped[bool] = mapped_column(Boolean)
    ctx_pos: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kind: Mapped[str] = mapped_column(String, default="message")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    platform_message_id: Mapped[str | None] = mapped_column(String, nullable=True)
    sent_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The platform's time of the message (epoch seconds), when it came with one."""


class AttachmentRow(Base):
    """One attachment of a message: its blob (by SHA-256) and what the platform said of it."""

    __tablename__ = "attachments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    message_id: Mapped[int] = mapped_column(ForeignKey("messages.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    mime_type: Mapped[str] = mapped_column(String)
    size_bytes: Mapped[int] = mapped_column(Integer)
    width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    pages: Mapped[int | None] = mapped_column(Integer, nullable=True)
    file_name: Mapped[str | None] = mapped_column(String, nullable=True)
    platform_file_id: Mapped[str | None] = mapped_column(String, nullable=True)


class ApiUsageRow(Base):
    """Token usage and cost of one model API call."""

    __tablename__ = "api_usage"
    __table_args__ = (Index("ix_api_usage_user_key_created_at", "user_key", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int | None] = mapped_column(
        ForeignKey("sessions.id"), nullable=True, index=True
    )
    purpose: Mapped[str] = mapped_column(String)
    provider: Mapped[str] = mapped_column(String)
    model: Mapped[str] = mapped_column(String)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cache_read_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cache_write_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    visit_start: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """The first model call of a turn that found the prompt cache cold (a visit's start)."""
    cache_write_1h_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The part of ``cache_write_tokens`` priced on the 1-hour tier."""
    user_key: Mapped[str | None] = mapped_column(String, nullable=True)
    """``platform:user_id`` of the user whose message the call answered (per-user budgets)."""


class ToolCallRow(Base):
    """One tool call the agent made: whose turn, which tool, when, how long it ran and how it
    ended (never its arguments or result)."""

    __tablename__ = "tool_calls"
    __table_args__ = (Index("ix_tool_calls_user_key_started_at", "user_key", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    user_key: Mapped[str | None] = mapped_column(String, nullable=True)
    """``platform:user_id`` of the user whose turn made the call (as on ``api_usage``)."""
    tool: Mapped[str] = mapped_column(String)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    run_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The tool's own run time; null when it never ran (refused, cancelled before it ran)."""
    outcome: Mapped[str] = mapped_column(String)
    """``ok``, ``error``, ``denied``, ``timeout``, ``not_asked`` or ``cancelled``."""


class TurnStopRow(Base):
    """A turn that ended before its answer because it reached the step limit
    (``agent.max_iterations``): whose turn, when, after how many requests."""

    __tablename__ = "turn_stops"
    __table_args__ = (Index("ix_turn_stops_user_key_stopped_at", "user_key", "stopped_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    user_key: Mapped[str | None] = mapped_column(String, nullable=True)
    """``platform:user_id`` of the user whose turn it was (as on ``api_usage``)."""
    reason: Mapped[str] = mapped_column(String)
    """``max_iterations``."""
    requests: Mapped[int] = mapped_column(Integer)
    """Model requests the turn made before it stopped."""
    stopped_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class UserAccessRow(Base):
    """A user an admin allowed or denied at run time, by id or by username (overrides the
    config's ``allowed_users``)."""

    __tablename__ = "user_access"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String, index=True)
    user_id: Mapped[str | None] = mapped_column(String, nullable=True)
    username: Mapped[str | None] = mapped_column(String, nullable=True)
    access: Mapped[str] = mapped_column(String)
    set_by: Mapped[str] = mapped_column(String)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CompactionRow(Base):
    """One compaction attempt, whether it changed the context or not."""

    __tablename__ = "compactions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), index=True)
    trigger: Mapped[str] = mapped_column(String)
    outcome: Mapped[str] = mapped_column(String)
    degraded: Mapped[bool] = mapped_column(Boolean, default=False)
    first_message_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_message_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary_message_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_before: Mapped[int] = mapped_column(Integer, default=0)
    tokens_after: Mapped[int] = mapped_column(Integer, default=0)
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    estimated_saving_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    """A policy compaction's (``cold_start``, ``idle``) estimated prompt saving over the visit."""
    estimated_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    """A policy compaction's estimated summary cost."""


class InboundRow(Base):
    """A platform message as received, keyed by the platform's own id (exactly-once handling)."""

    __tablename__ = "inbound"
    __table_args__ = (
        UniqueConstraint("platform", "platform_message_id"),
        Index("ix_inbound_status_received", "status", "received_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String)
    platform_message_id: Mapped[str] = mapped_column(String)
    session_key: Mapped[str] = mapped_column(String)
    chat_id: Mapped[str] = mapped_column(String)
    user_id: Mapped[str | None] = mapped_column(String, nullable=True)
    text: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String)
    reply_platform_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The stored user message of the turn that took this message in (every message of a
    # merged turn points at the same row), so a resumed turn never stores the text again.
    user_message_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The reply that answers it (every message of a merged turn points at the same reply).
    reply_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    failure: Mapped[str | None] = mapped_column(Text, nullable=True)
    """Why handling ended ``failed`` (e.g. the platform refused the reply), else None."""


class ReplyRow(Base):
    """One reply as planned before its first part is sent: where it goes and how it ended."""

    __tablename__ = "replies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String)
    session_key: Mapped[str] = mapped_column(String)
    chat_id: Mapped[str] = mapped_column(String)
    thread_id: Mapped[str | None] = mapped_column(String, nullable=True)
    status: Mapped[str] = mapped_column(String)
    closes_as: Mapped[str] = mapped_column(String)
    """The status its inbound messages get once the last part is sent (done, or failed when
    the reply is the notice of a failed turn)."""
    failure: Mapped[str | None] = mapped_column(Text, nullable=True)
    """Why it could not be delivered (status failed)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ReplyPartRow(Base):
    """One platform message of a reply; ``platform_message_id`` is set once it was sent."""

    __tablename__ = "reply_parts"
    __table_args__ = (UniqueConstraint("reply_id", "part_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    reply_id: Mapped[int] = mapped_column(ForeignKey("replies.id"))
    part_index: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    platform_message_id: Mapped[str | None] = mapped_column(String, nullable=True)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    voice: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """A voice message's audio (blob hash, seconds, waveform); ``text`` is then its caption.
    None for a text message."""


class LiveMessageRow(Base):
    """A platform message a reply was shown in while being written (recorded before its first
    edit), under the inbound message it answers, so delivery and restarts can finish it."""

    __tablename__ = "live_messages"
    __table_args__ = (UniqueConstraint("platform", "chat_id", "anchor", "part_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String)
    chat_id: Mapped[str] = mapped_column(String)
    anchor: Mapped[str] = mapped_column(String)
    """The platform id of the first inbound message of the turn the reply answers."""
    part_index: Mapped[int] = mapped_column(Integer)
    platform_message_id: Mapped[str] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class MemoryRow(Base):
    """One remembered entry of a user (``scope`` user) or of a group chat (``scope`` chat)."""

    __tablename__ = "memories"
    __table_args__ = (Index("ix_memories_owner", "scope", "platform", "owner_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope: Mapped[str] = mapped_column(String)
    platform: Mapped[str] = mapped_column(String)
    owner_id: Mapped[str] = mapped_column(String)
    """The user's platform id (scope user) or the chat's (scope chat)."""
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class JobRow(Base):
    """A scheduled job: a prompt run as an agent turn at ``next_run_at`` (UTC) in its chat.

    ``kind`` once or cron; ``status`` pending, done, cancelled or disabled. ``runs`` counts the
    claims: the run's inbound message id is ``job:<id>:<runs>``, unique per run.
    """

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_due", "status", "next_run_at"),
        Index("ix_jobs_owner", "platform", "user_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String)
    user_id: Mapped[str] = mapped_column(String)
    username: Mapped[str | None] = mapped_column(String, nullable=True)
    """The owner's username when the job was made (an allowlist may name them by it)."""
    chat_id: Mapped[str] = mapped_column(String)
    thread_id: Mapped[str | None] = mapped_column(String, nullable=True)
    chat_type: Mapped[str] = mapped_column(String)
    session_key: Mapped[str] = mapped_column(String)
    """The session key of the chat that created it."""
    prompt: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String)
    cron: Mapped[str | None] = mapped_column(String, nullable=True)
    time_zone: Mapped[str] = mapped_column(String)
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    status: Mapped[str] = mapped_column(String)
    own_session: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    runs: Mapped[int] = mapped_column(Integer, default=0)


class UserSettingRow(Base):
    """A user's own settings (``/tz``): their time zone, None until set (UTC)."""

    __tablename__ = "user_settings"

    platform: Mapped[str] = mapped_column(String, primary_key=True)
    user_id: Mapped[str] = mapped_column(String, primary_key=True)
    time_zone: Mapped[str | None] = mapped_column(String, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ToolApprovalRow(Base):
    """A tool a chat allowed for good ("Always in this chat")."""

    __tablename__ = "tool_approvals"
    __table_args__ = (UniqueConstraint("platform", "chat_id", "tool"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String)
    chat_id: Mapped[str] = mapped_column(String)
    tool: Mapped[str] = mapped_column(String)
    """The tool's name as the model calls it (``server__tool``)."""
    user_id: Mapped[str | None] = mapped_column(String, nullable=True)
    """Who pressed the button."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApprovalPromptRow(Base):
    """An approval prompt the bot sent: a bot message like a reply part (never a part in
    doubt), recorded right after its send."""

    __tablename__ = "approval_prompts"
    __table_args__ = (Index("ix_approval_prompts_chat", "platform", "chat_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String)
    chat_id: Mapped[str] = mapped_column(String)
    platform_message_id: Mapped[str] = mapped_column(String)
    tool: Mapped[str] = mapped_column(String)
    decision: Mapped[str | None] = mapped_column(String, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class McpToolListRow(Base):
    """An MCP server's last tool list (names, order, schemas), offered after a restart while
    the server is down."""

    __tablename__ = "mcp_tool_lists"

    server: Mapped[str] = mapped_column(String, primary_key=True)
    tools: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    """``[{"name", "description", "input_schema"}, ...]`` in the server's order."""
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ToolOutputRow(Base):
    """A tool result too large for the context, kept whole for its session to page through."""

    __tablename__ = "tool_outputs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(Integer, index=True)
    tool: Mapped[str] = mapped_column(String)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DeadLetterRow(Base):
    """An update a platform sent that could not be parsed or recorded, kept raw (quarantine)."""

    __tablename__ = "dead_letters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String, index=True)
    ref: Mapped[str | None] = mapped_column(String, nullable=True)
    reason: Mapped[str] = mapped_column(Text)
    detail: Mapped[str] = mapped_column(Text, default="")
    raw: Mapped[str] = mapped_column(Text)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class GatewayLeaseRow(Base):
    """The leadership of a group of gateways sharing this database (``gateway.failover``):
    who holds it, under which epoch (the fencing token every leader write carries), until
    when (the database's clock). One row per group; written only by
    :mod:`gateway.store.leases`."""

    __tablename__ = "gateway_leases"

    name: Mapped[str] = mapped_column(String, primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, default=0)
    holder: Mapped[str | None] = mapped_column(String, nullable=True)
    host: Mapped[str | None] = mapped_column(String, nullable=True)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    backend_pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    takeovers: Mapped[int] = mapped_column(Integer, default=0)
    acquired_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    renewed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class GatewayMemberRow(Base):
    """A gateway process seen in the election (leader or standby), heartbeating ``seen_at``."""

    __tablename__ = "gateway_members"

    member: Mapped[str] = mapped_column(String, primary_key=True)
    host: Mapped[str] = mapped_column(String)
    pid: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime)


class WebhookInboxRow(Base):
    """A webhook update a standby received (failover): kept raw until the leader takes it in
    through its adapter (and the inbound table), then deleted. Idempotent by update id."""

    __tablename__ = "webhook_inbox"

    platform: Mapped[str] = mapped_column(String, primary_key=True)
    update_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


metadata = Base.metadata
"""The schema's MetaData, used by the alembic environment (autogenerate) and the tests."""

messages_table = cast(Table, MessageRow.__table__)
"""The messages table for Core statements: bulk inserts skip the ORM entirely."""
attachments_table = cast(Table, AttachmentRow.__table__)
"""The attachments table for Core statements (written with their message)."""


def include_core_object(
    name: str | None, type_: str, parent_names: Mapping[str, str | None]
) -> bool:
    """Alembic's ``include_name`` filter: compare only the core schema's own objects.

    Plugins (such as a context engine) add tables of their own through later revisions; those
    are not part of this metadata and must not show up as differences to "remove".
    """
    if type_ == "table":
        return name in metadata.tables
    if type_ == "index":
        # A plugin may index a core table too (e.g. full-text search over messages).
        return name in {index.name for table in metadata.tables.values() for index in table.indexes}
    table = parent_names.get("table_name")
    return table is None or table in metadata.tables


class ChatVoiceRow(Base):
    """A chat's ``/voice`` mode (off, on, auto); a chat without a row uses ``tts.voice``."""

    __tablename__ = "chat_voice"
    __table_args__ = (UniqueConstraint("platform", "chat_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String)
    chat_id: Mapped[str] = mapped_column(String)
    mode: Mapped[str] = mapped_column(String)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SpeechUsageRow(Base):
    """One spoken answer: whose, by which provider, how many characters, at what cost."""

    __tablename__ = "speech_usage"
    __table_args__ = (
        Index("ix_speech_usage_user_key_created_at", "user_key", "created_at"),
        Index("ix_speech_usage_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_key: Mapped[str | None] = mapped_column(String, nullable=True)
    session_key: Mapped[str] = mapped_column(String)
    provider: Mapped[str] = mapped_column(String)
    chars: Mapped[int] = mapped_column(Integer)
    cost_usd: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
