"""Small typed values that cross the agent's boundaries.

Messages themselves stay chat-completions dicts (see DESIGN.md); everything else that
travels between the provider, the loop, the context engines and the gateway is here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Message = dict[str, Any]
"""A chat-completions message: role, content (str | list[part] | None), tool_calls, tool_call_id.

A message loaded from the store also carries ``"_id"`` (its row id); keys starting with ``_``
are bookkeeping and never reach a provider.
"""
UserContent = str | list[dict[str, Any]]
"""A user message's content: its text, or parts (attachments and text) in order."""


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


class IncompleteResponseError(ProviderError):
    """The model's answer ended before it was complete (a stream cut off before its end)."""


CompactionTrigger = Literal["agent", "hygiene", "manual", "emergency", "cold_start", "idle"]
"""Why a compaction ran: the agent's threshold, the gateway's hygiene, ``/compress``, a
prompt-too-long error, or the context policy (``cold_start``: a message after the cache
expired; ``idle``: in the background once the cache expired)."""
COLD_TRIGGERS: tuple[CompactionTrigger, ...] = ("cold_start", "idle")
"""The context policy's triggers: the cache is cold, so the whole prompt is rewritten anyway."""
CompactionOutcome = Literal["summarized", "chunked", "fallback", "pruned_only", "skipped"]


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
    engine_state: dict[str, Any] = field(default_factory=dict)
    estimated_saving_usd: float | None = None
    """Set by the context policy on its compactions: the prompt cost it expects to save over
    the visit, and (``estimated_cost_usd``) what it expected the summary to cost."""
    estimated_cost_usd: float | None = None
