"""Small typed values that cross the agent's boundaries.

Messages themselves stay chat-completions dicts (see DESIGN.md); everything else that
travels between the provider, the loop, the context engines and the gateway is here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Self, TypedDict, cast

ContentPart = dict[str, Any]
"""One part of a message's content (``{"type": "text", "text": ...}``, an image, a document,
an attachment reference): the provider's wire blocks stop at the provider that converts them."""
UserContent = str | list[ContentPart]
"""A user message's content: its text, or parts (attachments and text) in order."""
MessageContent = str | list[ContentPart] | None
"""What a message says: text, parts in order, or nothing (an assistant's pure tool call)."""

BOOKKEEPING_PREFIX = "_"
"""Every bookkeeping key starts with it; providers drop any key that does."""


class MessageBookkeeping(TypedDict, total=False):
    """What the agent and the store keep on a :data:`Message` beside its wire keys.

    Every key here starts with :data:`BOOKKEEPING_PREFIX`; a provider's wire body never carries
    one (each provider converts through :func:`without_bookkeeping`). Only ``_sent_at`` and the
    row id are columns of the stored message; the others are rebuilt when it is loaded.
    """

    _id: int
    """The message's row id in the store. Absent on a message not stored yet: a new one of the
    turn, a compaction's summary or a rewritten copy (a pruned tool output, a repair stub)."""
    _tokens: int
    """Its token count, counted once (:func:`agent.tokens.cache_message_tokens`) and stored."""
    _kind: str
    """The stored row's kind when it is not an ordinary message: ``"summary"`` (a
    compaction's summary), ``"derived"`` (a rewritten copy) or ``"notice"``."""
    _sent_at: float
    """The platform's time of a user message (epoch seconds): session clocks decide by it."""
    _platform_message_id: str
    """The platform id of the inbound message a user message was stored from, so a turn a
    crash interrupted is resumed instead of stored twice."""


ToolCall = dict[str, Any]
"""One tool call of an assistant message, chat-completions shaped: ``{"id", "type": "function",
"function": {"name", "arguments"}}`` (each provider's response parser builds it)."""


class Message(MessageBookkeeping, total=False):
    """A chat-completions message: ``role``, ``content`` (str | list[part] | None),
    ``tool_calls`` of an assistant, ``tool_call_id`` and ``name`` of a tool result.

    Beside those wire keys it may carry the bookkeeping of :class:`MessageBookkeeping`, keys
    starting with ``_`` that never reach a provider (:func:`without_bookkeeping`), and a
    ``cache_control`` marker laid on a copy for one request (:mod:`agent.prompt_caching`).
    """

    role: str
    content: MessageContent
    tool_calls: list[ToolCall]
    tool_call_id: str
    name: str
    is_error: bool
    """A tool result that reports a failure (the provider's error flag)."""
    cache_control: dict[str, str]


BOOKKEEPING_KEYS: frozenset[str] = frozenset(MessageBookkeeping.__annotations__)
"""The keys of :class:`MessageBookkeeping`."""


def note_stored_ids(messages: Sequence[Message], ids: Sequence[int]) -> None:
    """Mark ``messages`` as stored under ``ids`` (their ``"_id"``), in order: the store
    returns the ids, and whoever keeps the context writes them on its own dicts."""
    if len(messages) != len(ids):
        raise ValueError(f"{len(messages)} messages but {len(ids)} stored ids")
    for message, row_id in zip(messages, ids, strict=True):
        message["_id"] = row_id


def unstored(messages: Sequence[Message]) -> list[Message]:
    """The messages not stored yet (no ``"_id"``): a compaction's summary and rewritten copies."""
    return [m for m in messages if "_id" not in m]


def without_bookkeeping(message: Message) -> Message:
    """A copy of the message with only its wire keys (no ``_``-prefixed key)."""
    return message_of({k: v for k, v in message.items() if not k.startswith(BOOKKEEPING_PREFIX)})


def message_of(fields: Mapping[str, object]) -> Message:
    """``fields`` as a :class:`Message` (a copy made key by key of another message's keys, or a
    row read back from the store): the one place a plain mapping becomes a message."""
    return cast(Message, dict(fields))


IMAGE_MARKER = "[image]"
DOCUMENT_MARKER = "[document]"
"""An image part when a message is read as text."""


def content_text(
    content: Any, *, separator: str = "\n", image_marker: str | None = IMAGE_MARKER
) -> str:
    """The text of a message content value (str, list of parts or None).

    Parts are joined with ``separator``; a stored attachment reads as its placeholder (what was
    attached, never its bytes), another image part as ``image_marker``, a document as
    :data:`DOCUMENT_MARKER` (all left out when ``image_marker`` is None).
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    from agent.attachments import attachment_of  # stdlib-only module; imported late, no cycle

    texts: list[str] = []
    for part in content:
        ref = attachment_of(part)
        if ref is not None:
            if image_marker is not None:
                texts.append(ref.placeholder())  # what was attached, never its bytes
        elif isinstance(part, dict) and part.get("type") in ("image", "image_url", "document"):
            if image_marker is not None:
                texts.append(image_marker if part["type"] != "document" else DOCUMENT_MARKER)
        elif isinstance(part, dict):
            texts.append(str(part.get("text", "")))
        else:
            texts.append(str(part))
    return separator.join(texts)


def reply_text(message: Message) -> str:
    """A model's answer as the user reads it: its text parts joined, nothing else."""
    return content_text(message.get("content"), separator="", image_marker=None)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one API call, normalised across providers.

    ``prompt_tokens`` is the prompt's real size: uncached input plus cache reads plus cache
    writes. Using ``input_tokens`` alone under-counts a cached prompt by 90% and more.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    model: str = ""

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


ToolOutcome = Literal["ok", "error", "denied", "timeout", "not_asked", "cancelled"]
"""How a tool call ended: it ran and answered (``ok``) or answered an error text (``error``);
the user denied it or did not answer the approval in time (``denied``, ``timeout``); its
approval could not be asked (``not_asked``); ``/stop`` cancelled it (``cancelled``)."""


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call, as the usage reports count it: never its arguments or its result."""

    tool: str
    """The tool's name as the model called it (``server__tool`` for an MCP tool)."""
    outcome: ToolOutcome
    run_seconds: float | None
    """How long the tool itself ran (monotonic clock; the approval wait is not in it); None
    when it never started (refused, or cancelled while waiting for approval)."""


@dataclass(slots=True)
class ModelResponse:
    """One model reply: the assistant message (chat-completions dict) and its usage."""

    message: Message
    usage: Usage
    stop_reason: str | None = None

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


class ProviderError(Exception):
    """A model call failed after the SDK's own retries."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class PromptTooLongError(ProviderError):
    """The provider refused the request because the prompt exceeds the model's context."""


class ProviderTimeoutError(ProviderError):
    """The model call timed out."""


class ProviderConnectionError(ProviderError):
    """The model's endpoint could not be reached (refused, reset, DNS): not an overload."""


class IncompleteResponseError(ProviderError):
    """The model's answer ended before it was complete (a stream cut off before its end)."""


CompactionTrigger = Literal[
    "agent", "hygiene", "manual", "emergency", "cold_start", "idle", "prune"
]
"""Why a compaction ran: the agent's threshold, the gateway's hygiene, ``/compress``, a
prompt-too-long error, or the context policy (``cold_start``: a message after the cache
expired; ``idle``: in the background once the cache expired; ``prune``: at a new message, the
tool outputs of earlier turns cleared without a summary, when that pays)."""
COLD_TRIGGERS: tuple[CompactionTrigger, ...] = ("cold_start", "idle")
"""The context policy's triggers: the cache is cold, so the whole prompt is rewritten anyway."""
CompactionOutcome = Literal["summarized", "chunked", "fallback", "pruned_only", "skipped"]


JsonObject = dict[str, Any]
"""A JSON object as ``json.loads`` gives it (what the store keeps in a JSON column)."""


@dataclass(frozen=True, slots=True)
class EngineState:
    """What a context engine keeps across restarts, persisted by the host with the session.

    Each engine that has state subclasses it as a frozen dataclass of JSON-compatible fields
    (its :attr:`agent.engines.context_engine.ContextEngine.state_type`). The host never looks
    inside: it stores :meth:`to_json` in ``sessions.engine_state`` and hands back
    :meth:`from_json` of that, which must accept every row an earlier version stored (and the
    state of another engine, when the configuration changed engines): unknown keys ignored,
    missing or mistyped ones at their defaults. This base class is the state of an engine
    that keeps none.
    """

    def to_json(self) -> JsonObject:
        """The state as the JSON object the store keeps."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> Self:
        """The state read back from ``stored`` (keys of this state's fields only, as given);
        subclasses whose fields need checking override it."""
        names = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in stored.items() if name in names})

    @classmethod
    def of(cls, state: EngineState) -> Self:
        """``state`` as this engine's state (converted through JSON when it is another's)."""
        return state if isinstance(state, cls) else cls.from_json(state.to_json())


@dataclass(slots=True)
class CompactionResult:
    """What one compaction did: the new in-context list and how it was produced.

    ``messages`` is the complete new context (system prompt first). Messages kept unchanged
    still carry their ``"_id"``; new or rewritten messages (the summary, pruned tool outputs,
    repair stubs) have none and are stored as new rows.
    """

    messages: list[Message]
    outcome: CompactionOutcome
    trigger: CompactionTrigger
    tokens_before: int
    tokens_after: int
    summary: str | None = None
    degraded: bool = False
    detail: str = ""
    first_compacted_id: int | None = None
    last_compacted_id: int | None = None
    user_notice: str | None = None
    engine_state: EngineState | None = None
    """The engine's state after this compaction, stored with it (None: unchanged)."""
    estimated_saving_usd: float | None = None
    """Set by the context policy on its compactions: the prompt cost it expects to save over
    the visit, and (``estimated_cost_usd``) what it expected the summary to cost."""
    estimated_cost_usd: float | None = None
    durable_facts: list[str] = field(default_factory=list)
    """Facts worth keeping beyond this session (names, preferences, decisions, standing
    instructions) that the summary request found in the compacted part, when the host asked for
    them (:attr:`agent.engines.context_engine.EngineContext.collect_durable_facts`); the host
    merges them into the owner's memory. Any engine may fill it."""


@dataclass(frozen=True, slots=True)
class CompactionEstimate:
    """What a compaction would do, estimated before it runs (token counts)."""

    prompt_tokens: int
    """The prompt as it is now."""
    kept_tokens: int
    """What the compaction keeps verbatim (head, tail) plus the summary message's framing."""
    summarized_tokens: int
    """What the summary request reads: the compacted middle and the previous summary."""
    summary_tokens: int
    """The summary's expected length (the summary request's output)."""
    summary_budget: int = 0
    """The summary request's ``max_tokens`` (0: none): the summary is never longer."""

    @property
    def compacted_tokens(self) -> int:
        """The prompt after the compaction: what is kept plus the summary."""
        return self.kept_tokens + self.summary_tokens

    def scaled_to(self, prompt_tokens: int | None) -> CompactionEstimate:
        """The estimate in the API's tokens, given the API-reported size of the prompt.

        Local counts are an approximation of the provider's tokenizer; the reported prompt
        sets the ratio for everything counted locally. The summary's length is a token budget
        budget the provider enforces: the expected length is capped by it.
        """
        ratio = prompt_tokens / self.prompt_tokens if prompt_tokens and self.prompt_tokens else 1.0
        summary = round(self.summary_tokens * ratio)
        return CompactionEstimate(
            prompt_tokens=prompt_tokens or self.prompt_tokens,
            kept_tokens=round(self.kept_tokens * ratio),
            summarized_tokens=round(self.summarized_tokens * ratio),
            summary_tokens=min(summary, self.summary_budget) if self.summary_budget else summary,
            summary_budget=self.summary_budget,
        )
