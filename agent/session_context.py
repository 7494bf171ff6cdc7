"""A session's in-context messages and the one way each change reaches them.

New messages are stored, then appended; a compaction is stored, then swapped in. Either way the
engine's prompt size follows and the provider session forgets conversions of a replaced history.
The agent loop and the compaction scheduler both change the context through one
:class:`SessionContext` handed to them when they are built, so neither calls the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from agent.engines.context_engine import ContextEngine
from agent.providers.base import ProviderSession
from agent.tokens import cache_message_tokens
from agent.types import (
    CompactionResult,
    CompactionTrigger,
    Message,
    ToolCallRecord,
    Usage,
    note_stored_ids,
    unstored,
)


class TurnRecorder(Protocol):
    """Where every new message, usage, tool call and compaction goes (the host persists them)."""

    async def record_messages(self, messages: list[Message]) -> list[int]:
        """Store new messages; returns their row ids, in order (the caller notes them)."""

    async def record_usage(self, usage: Usage, purpose: str) -> None:
        """Store the usage of one API call."""

    async def record_tool_call(self, call: ToolCallRecord) -> None:
        """Store that a tool was called, how long it ran and how it ended (for the usage
        reports; never its arguments or result)."""

    async def record_compaction(self, result: CompactionResult) -> list[int]:
        """Persist a compaction (new context, flags, summary) in one transaction; returns the
        row ids of the new messages of ``result.messages`` (those without ``"_id"``), in order."""

    async def record_turn_stop(self, reason: str, requests: int) -> None:
        """Store that the turn ended before its answer (``max_iterations``: the step limit)
        after ``requests`` model requests, for the usage reports."""


SystemPromptSource = Callable[[], Awaitable[str]]
"""The system prompt as the host would write it now (the configured prompt and a snapshot of
the memory); read only where the prompt cache is cold anyway."""


FactKeeper = Callable[[list[str]], Awaitable[object]]
"""Keeps a compaction's durable facts (the host merges them into the owner's memory)."""


class SessionContext:
    """The messages the model sees next (system prompt first), kept in step with the store."""

    def __init__(
        self,
        messages: list[Message],
        engine: ContextEngine,
        recorder: TurnRecorder,
        provider_session: ProviderSession,
        system_prompt: SystemPromptSource | None = None,
        keep_facts: FactKeeper | None = None,
        refresh_tools: Callable[[], bool] | None = None,
    ) -> None:
        self.messages = messages
        """The context itself, changed in place (the host holds the same list)."""
        self.engine = engine
        self.recorder = recorder
        self.provider_session = provider_session
        """The provider's per-session request state (the converted history, kept across calls)."""
        self.system_prompt = system_prompt
        """Where a fresh system prompt comes from at cold points (None: it never changes)."""
        self.keep_facts = keep_facts
        """Where a compaction's durable facts go (None: they are not kept)."""
        self.refresh_tools = refresh_tools
        """Takes the tool providers' newest lists at cold points (True: the list changed)."""
        self._untold: list[CompactionResult] = []
        self.rewrite_point: int | None = None
        """The first message a compaction or clearing changed, until the next model call
        answers: that call carries a cache breakpoint just before it, so the unchanged prefix
        is read from the cache however far back the change lies (the API looks for earlier
        cache entries only about 20 blocks before each breakpoint)."""

    @property
    def prompt_tokens(self) -> int | None:
        """The best knowledge of the next prompt's size: API-reported plus what came since."""
        return self.engine.current_prompt_tokens

    async def append(self, messages: list[Message]) -> None:
        """Store ``messages``, then add them to the context."""
        note_stored_ids(messages, await self.recorder.record_messages(messages))
        self.add_stored(messages)

    def add_stored(self, messages: list[Message]) -> None:
        """Add messages the host has stored itself (each has its ``"_id"``) to the context."""
        self.messages.extend(messages)
        self.engine.note_messages_added(sum(cache_message_tokens(m) for m in messages))

    async def compact(
        self, trigger: CompactionTrigger, focus_topic: str | None = None
    ) -> CompactionResult:
        """Compact the context through the engine, now, and apply the result."""
        result = await self.engine.compact(list(self.messages), trigger, focus_topic)
        await self.apply(result)
        return result

    async def apply(self, result: CompactionResult, *, refresh_prefix: bool | None = None) -> None:
        """Persist ``result``, make its messages the context (in place) and take its size as
        the prompt's until the next response reports the real one. Its durable facts are
        kept first, so the fresh system prompt's memory snapshot already holds them. Without
        ``refresh_prefix`` (default: for every trigger but ``prune``, which keeps the cached
        prefix up to the first cleared output) the system prompt and tool list stay as they
        are."""
        note_stored_ids(unstored(result.messages), await self.recorder.record_compaction(result))
        self.rewrite_point = first_change(self.messages, result.messages)
        self.messages[:] = result.messages
        self.provider_session.reset()
        self.engine.note_compaction(result)
        self._untold.append(result)
        if result.durable_facts and self.keep_facts is not None:
            await self.keep_facts(result.durable_facts)
        if refresh_prefix if refresh_prefix is not None else result.trigger != "prune":
            await self.refresh_system_prompt()  # the prefix is rewritten anyway

    async def refresh_system_prompt(self) -> bool:
        """Take a fresh snapshot of the system prompt (memory included) into the context.

        Only for cold points (session start, a visit after the cache expired, a compaction):
        elsewhere it would rewrite the cached prefix. The stored system message keeps the
        configured prompt; the snapshot lives in the loaded context. Returns whether it changed.
        The tool list (the first part of the cached prefix) is refreshed here too.
        """
        if self.refresh_tools is not None:
            self.refresh_tools()
        if self.system_prompt is None or not self.messages:
            return False
        current = self.messages[0]
        if current.get("role") != "system":
            return False
        text = await self.system_prompt()
        if current.get("content") == text:
            return False
        fresh = current.copy()
        fresh.pop("_tokens", None)
        fresh["content"] = text
        self.messages[0] = fresh
        self.rewrite_point = None  # everything is written again: no prefix to keep
        self.provider_session.reset()
        self.engine.note_messages_added(cache_message_tokens(fresh) - cache_message_tokens(current))
        return True

    def take_compactions(self) -> list[CompactionResult]:
        """The compactions applied since the last call, each handed over once (the host tells
        the user about them)."""
        taken, self._untold = self._untold, []
        return taken


def first_change(before: Sequence[Message], after: Sequence[Message]) -> int:
    """The index of the first message of ``after`` that is not the same object as in
    ``before`` (the length of the shorter list when one is a prefix of the other)."""
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old is not new:
            return index
    return min(len(before), len(after))
