"""Immutable values the repository hands to its callers, one per kind of stored thing.

Callers never see SQLAlchemy rows: these frozen dataclasses are the store's public vocabulary.
Datetimes are timezone-aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent.types import Message, MessageBookkeeping, message_of

MESSAGE_KIND = "message"
"""A message as said by the user, the model or a tool."""
SUMMARY_KIND = "summary"
"""A summary written by a compaction, standing in for the messages it replaced."""
DERIVED_KIND = "derived"
"""A rewritten copy made by a compaction (a pruned tool output, a repair stub)."""
NOTICE_KIND = "notice"
"""A note from the gateway itself, e.g. that the context was compacted."""
MESSAGE_KINDS = frozenset({MESSAGE_KIND, SUMMARY_KIND, DERIVED_KIND, NOTICE_KIND})

INBOUND_STATUSES = frozenset({"pending", "processing", "done", "refused", "failed"})
"""Life cycle of a received platform message: pending -> processing -> done/refused/failed."""
UNFINISHED_INBOUND_STATUSES = ("pending", "processing")


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One conversation and the context-engine state that must survive a restart."""

    id: int
    key: str
    platform: str
    chat_id: str
    user_id: str | None
    title: str | None
    active: bool
    engine: str
    engine_state: dict[str, Any]
    previous_summary: str | None
    compression_count: int
    last_prompt_tokens: int | None
    compaction_cooldown_until: datetime | None
    created_at: datetime
    updated_at: datetime
    model: str | None = None
    """The model chosen for this session with ``/model``; None: the configured one."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """A line of ``hermes sessions list``: a session and how many messages it holds."""

    id: int
    key: str
    platform: str
    active: bool
    created_at: datetime
    updated_at: datetime
    message_count: int
    title: str | None


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One stored message with its bookkeeping (context position, kind, token count)."""

    id: int
    session_id: int
    role: str
    content: Any
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    extra: dict[str, Any] | None
    token_count: int
    in_context: bool
    ctx_pos: int | None
    kind: str
    created_at: datetime
    platform_message_id: str | None
    sent_at: float | None
    """The platform's time of the message (epoch seconds); None when it came without one."""

    def as_message(self) -> Message:
        """The chat-completions dict, with ``"_id"``, ``"_tokens"`` (and ``"_sent_at"`` when
        known) for bookkeeping.

        Keys the message was stored with beyond role/content/tool_calls/tool_call_id come back
        from ``extra``; a summary, derived or notice message also carries ``"_kind"``.
        """
        message: Message = {"role": self.role, "content": self.content}
        if self.tool_calls is not None:
            message["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        if self.extra:
            message = message_of({**message, **self.extra})
        message.update(self.bookkeeping())
        return message

    def bookkeeping(self) -> MessageBookkeeping:
        """What the stored row adds to its message dict: row id, token count, and the kind,
        platform id and platform time when it has them."""
        bookkeeping: MessageBookkeeping = {"_id": self.id, "_tokens": self.token_count}
        if self.kind != MESSAGE_KIND:
            bookkeeping["_kind"] = self.kind
        if self.platform_message_id is not None:
            bookkeeping["_platform_message_id"] = self.platform_message_id
        if self.sent_at is not None:
            bookkeeping["_sent_at"] = self.sent_at
        return bookkeeping


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One compaction attempt as stored.

    ``new_message_ids`` are the rows :meth:`Repository.apply_compaction` inserted, in the order
    of the new context, so the caller can put ``"_id"`` on its in-memory copies.
    """

    id: int
    session_id: int
    trigger: str
    outcome: str
    degraded: bool
    first_message_id: int | None
    last_message_id: int | None
    summary: str | None
    summary_message_id: int | None
    tokens_before: int
    tokens_after: int
    detail: str
    created_at: datetime
    new_message_ids: tuple[int, ...] = ()
    estimated_saving_usd: float | None = None
    """The context policy's estimate of the prompt cost it saves (``cold_start``, ``idle``)."""
    estimated_cost_usd: float | None = None
    """The context policy's estimate of its summary's cost."""


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Token usage and cost summed over a session's API calls (``/usage``)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    cache_write_1h_tokens: int = 0
    """The part of ``cache_write_tokens`` priced on the 1-hour tier."""

    @property
    def prompt_tokens(self) -> int:
        """Everything sent as prompt: uncached input, cache reads and cache writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )

    @property
    def cache_hit_rate(self) -> float:
        """The share of prompt tokens served from the prompt cache (0 when nothing was sent)."""
        prompt = self.prompt_tokens
        return self.cache_read_tokens / prompt if prompt else 0.0


@dataclass(frozen=True, slots=True)
class UsageGroup:
    """A session's usage of one purpose (``chat``, ``compression``) and model, at a visit's
    start (``visit_start``) or not."""

    purpose: str
    model: str
    totals: UsageTotals
    visit_start: bool = False


@dataclass(frozen=True, slots=True)
class InboundRecord:
    """A received platform message and how far its handling got."""

    id: int
    platform: str
    platform_message_id: str
    session_key: str
    chat_id: str
    user_id: str | None
    text: str
    payload: dict[str, Any]
    status: str
    reply_platform_ids: tuple[str, ...]
    received_at: datetime
    updated_at: datetime
    user_message_id: int | None = None
    """The stored user message of the turn that took it in (None until stored)."""
    reply_id: int | None = None
    """The reply answering it (None until the reply is planned)."""
    failure: str | None = None
    """Why it ended ``failed``."""


@dataclass(frozen=True, slots=True)
class InboundLink:
    """The inbound messages (one platform) that a stored user message was made from."""

    platform: str
    platform_message_ids: tuple[str, ...]


REPLY_SENDING = "sending"
REPLY_SENT = "sent"
REPLY_FAILED = "failed"
REPLY_STATUSES = frozenset({REPLY_SENDING, REPLY_SENT, REPLY_FAILED})
"""Life cycle of a reply: sending (parts still unsent) -> sent, or failed (permanently)."""


@dataclass(frozen=True, slots=True)
class VoiceAudio:
    """The audio of a voice message part: an OGG/Opus blob, how long it plays, its waveform."""

    blob: str
    """SHA-256 of the OGG/Opus bytes in the blob folder."""
    duration: float
    waveform: str
    """Base64 of up to 256 loudness bytes (Discord's ``waveform``)."""

    def to_json(self) -> dict[str, Any]:
        """As stored in ``reply_parts.voice``."""
        return {"blob": self.blob, "duration": self.duration, "waveform": self.waveform}

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> VoiceAudio | None:
        """Read back what :meth:`to_json` stored (None for a text part)."""
        if not value:
            return None
        return cls(str(value["blob"]), float(value["duration"]), str(value["waveform"]))


@dataclass(frozen=True, slots=True)
class ReplyPart:
    """One platform message of a reply; ``platform_message_id`` is None until it is sent."""

    index: int
    text: str
    platform_message_id: str | None = None
    voice: VoiceAudio | None = None
    """Set for a voice message (``text`` is its caption, possibly empty)."""

    @property
    def sent(self) -> bool:
        return self.platform_message_id is not None


@dataclass(frozen=True, slots=True)
class ReplyRecord:
    """A reply planned for one turn: where it goes, its parts in order, how far it got."""

    id: int
    platform: str
    session_key: str
    chat_id: str
    thread_id: str | None
    status: str
    closes_as: str
    failure: str | None
    parts: tuple[ReplyPart, ...]
    answers: tuple[str, ...] = ()
    """Platform ids of the inbound messages it answers, oldest first."""

    @property
    def unsent(self) -> tuple[ReplyPart, ...]:
        """The parts still to send, in order."""
        return tuple(part for part in self.parts if not part.sent)
