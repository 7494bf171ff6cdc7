"""The agent loop: one user turn from message to final answer, tools and compaction included.

A turn is: system prompt + in-context history + the new user message -> model -> tool calls
executed and fed back -> ... -> final answer or the iteration budget. Before every model call
the context engine judges the real prompt size (the last API-reported size plus what was added
since) and compacts when needed. Everything produced is handed to a :class:`TurnRecorder` as
it happens, so a crash or ``/stop`` leaves the stored session consistent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agent import reply_stream
from agent.engines.context_engine import ContextEngine
from agent.prompt_caching import CachePolicy, MarkedHistory, cache_breakpoints
from agent.providers.base import Provider
from agent.tokens import cache_message_tokens
from agent.tools.registry import ToolRegistry
from agent.types import (
    CompactionResult,
    CompactionTrigger,
    IncompleteResponseError,
    Message,
    ModelResponse,
    PromptTooLongError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    Usage,
    note_stored_ids,
    reply_text,
    unstored,
)

log = logging.getLogger(__name__)

CANCELLED_TOOL_RESULT = "[Tool call cancelled before it finished]"
MISSING_TOOL_RESULT = "[Tool result not available: the run was interrupted]"
APOLOGY = (
    "Sorry, I couldn't reach the model just now ({reason}). Your message is saved; "
    "please try again in a moment."
)
TOO_LONG_APOLOGY = (
    "Sorry, this conversation is too long for the model even after compacting it. "
    "Send /new to start a fresh session (this one stays stored)."
)
FIXED_TTL_FALLBACK = "5m"
"""The tier of a loop with ``cache_ttl: auto`` but no session to choose one (the default)."""
ITERATION_LIMIT_NOTE = "(I stopped after {n} tool rounds without a final answer.)"
NO_ANSWER_NOTICE = (
    "Sorry, the model sent back an empty answer, twice. Your message is saved; "
    "please try again in a moment."
)
EMPTY_ANSWER_RETRIES = 1
"""How often an empty or cut-off answer is asked for again before the user gets the notice."""

StopReason = Literal["final", "max_iterations", "provider_error", "prompt_too_long", "no_answer"]


class TurnRecorder(Protocol):
    """Where the loop hands every new message, usage and compaction (the host persists them)."""

    async def record_messages(self, messages: list[Message]) -> list[int]:
        """Store new messages; returns their row ids, in order (the caller notes them)."""

    async def record_usage(self, usage: Usage, purpose: str) -> None:
        """Store the usage of one API call."""

    async def record_compaction(self, result: CompactionResult) -> list[int]:
        """Persist a compaction (new context, flags, summary) in one transaction; returns the
        row ids of the new messages of ``result.messages`` (those without ``"_id"``), in order."""


@dataclass(slots=True)
class TurnResult:
    """What one turn produced."""

    reply: str
    stop_reason: StopReason
    new_messages: list[Message] = field(default_factory=list)
    usages: list[Usage] = field(default_factory=list)
    compactions: list[CompactionResult] = field(default_factory=list)
    wait_seconds: float = 0.0
    """Time spent waiting on the model (calls and compactions): the rest is our overhead."""


@dataclass(slots=True)
class LoopSettings:
    """Per-session knobs of the loop."""

    max_tokens: int = 4096
    max_iterations: int = 20
    cache_policy: CachePolicy | None = None
    cache_ttl: Callable[[], str] | None = None
    """The session's cache tier ("5m" or "1h"), asked at every call: ``cache_ttl: auto``
    chooses it per session. None: the cache policy's fixed tier."""

    def marker_ttl(self) -> str:
        """The tier of this call's breakpoints (one tier for all of a request's breakpoints,
        so the rule that 1h breakpoints come before 5m ones always holds)."""
        if self.cache_ttl is not None:
            return self.cache_ttl()
        policy = self.cache_policy
        return FIXED_TTL_FALLBACK if policy is None or policy.ttl == "auto" else policy.ttl


def _failure_reason(exc: ProviderError) -> str:
    """What the user is told went wrong: a connection error is not called an overload."""
    if isinstance(exc, ProviderConnectionError):
        return "its endpoint could not be reached"
    if isinstance(exc, ProviderTimeoutError):
        return "it did not answer in time"
    if exc.status == 429:
        return "the rate limit was reached"
    return "the service is overloaded" if exc.retryable else "the request failed"


def _compact_now(trigger: CompactionTrigger) -> bool:
    """Without a host that compacts beside the turns, every compaction holds up the turn."""
    return False


class AgentLoop:
    """Runs turns for one session over a context list it keeps up to date in place."""

    def __init__(
        self,
        provider: Provider,
        engine: ContextEngine,
        tools: ToolRegistry,
        recorder: TurnRecorder,
        settings: LoopSettings | None = None,
    ) -> None:
        self.provider = provider
        self.engine = engine
        self.tools = tools
        self.recorder = recorder
        self.settings = settings or LoopSettings()
        self.provider_session = provider.open_session()
        """The provider's per-session request state (the converted history, kept across calls)."""
        self.defer: Callable[[CompactionTrigger], bool] = _compact_now
        """Asked when the engine's threshold is reached mid-turn: True when the host runs the
        compaction beside the turn instead (the prompt still fits the window)."""
        self._untold: list[CompactionResult] = []

    # -- prompt size ---------------------------------------------------------------------
    def current_prompt_tokens(self) -> int | None:
        """The best knowledge of the next prompt's size: API-reported plus what came since."""
        return self.engine.current_prompt_tokens

    async def _append(self, context: list[Message], messages: list[Message]) -> None:
        note_stored_ids(messages, await self.recorder.record_messages(messages))
        context.extend(messages)
        self.engine.note_messages_added(sum(cache_message_tokens(m) for m in messages))

    # -- compaction ----------------------------------------------------------------------
    async def compact(
        self,
        context: list[Message],
        trigger: CompactionTrigger,
        *,
        focus_topic: str | None = None,
    ) -> CompactionResult:
        """Compact ``context`` in place through the engine and persist the result."""
        result = await self.engine.compact(list(context), trigger, focus_topic)
        await self.apply_compaction(context, result)
        return result

    async def apply_compaction(self, context: list[Message], result: CompactionResult) -> None:
        """Persist ``result``, make its messages the context (in place) and take its size as
        the prompt's until the next response reports the real one."""
        note_stored_ids(unstored(result.messages), await self.recorder.record_compaction(result))
        context[:] = result.messages
        self.provider_session.reset()
        self.engine.note_compaction(result)
        self._untold.append(result)

    def take_compactions(self) -> list[CompactionResult]:
        """The compactions applied since the last call, each handed over once (the host tells
        the user about them: gateway/sessions/compaction_notice.py)."""
        taken, self._untold = self._untold, []
        return taken

    # -- one turn ------------------------------------------------------------------------
    async def add_user_message(self, context: list[Message], message: Message) -> None:
        """Add a user message the host has stored (it has its ``"_id"``) to the context,
        before the turn runs."""
        context.append(message)
        self.engine.note_messages_added(cache_message_tokens(message))

    async def run_turn(self, context: list[Message], user_message: Message | None) -> TurnResult:
        """Run one turn. ``context`` (system prompt first) is updated in place.

        ``user_message`` None runs the turn for the user message(s) already at the end of
        ``context`` (added by :meth:`add_user_message`, or stored by an interrupted turn).
        """
        result = TurnResult(reply="", stop_reason="final")
        if user_message is not None:
            await self._append(context, [user_message])
            result.new_messages.append(user_message)
        emergency_used = False
        empty_answers = 0
        iteration = 0
        while iteration < self.settings.max_iterations:
            if self.engine.should_compress(self.current_prompt_tokens()) and not self.defer(
                "agent"
            ):
                await self._compact_into(context, "agent", result)
            started = time.perf_counter()
            response: ModelResponse | None
            try:
                response = await self._call_model(context)
            except PromptTooLongError as exc:
                result.wait_seconds += time.perf_counter() - started
                if emergency_used:
                    log.warning("prompt still too long after emergency compaction: %s", exc)
                    result.reply, result.stop_reason = TOO_LONG_APOLOGY, "prompt_too_long"
                    return result
                emergency_used = True
                await self._compact_into(context, "emergency", result)
                continue
            except IncompleteResponseError as exc:
                log.warning("model answer incomplete (%s)", exc)
                response = None
            except ProviderError as exc:
                log.error("model call failed for provider %s: %s", self.provider.name, exc)
                reason = _failure_reason(exc)
                result.reply, result.stop_reason = APOLOGY.format(reason=reason), "provider_error"
                return result
            result.wait_seconds += time.perf_counter() - started
            if response is not None:
                result.usages.append(response.usage)
            if response is None or _is_empty(response):
                # Nothing to show or store: ask again once, then tell the user (never silence).
                empty_answers += 1
                if empty_answers > EMPTY_ANSWER_RETRIES:
                    result.reply, result.stop_reason = NO_ANSWER_NOTICE, "no_answer"
                    return result
                log.warning("model gave no answer; asking again")
                continue
            iteration += 1
            await self._append(context, [response.message])
            result.new_messages.append(response.message)
            if not response.tool_calls:
                result.reply = reply_text(response.message)
                return result
            tool_messages = await self._run_tools(response.tool_calls)
            await self._append(context, tool_messages)
            result.new_messages.extend(tool_messages)
        result.reply = ITERATION_LIMIT_NOTE.format(n=self.settings.max_iterations)
        result.stop_reason = "max_iterations"
        return result

    async def _compact_into(
        self, context: list[Message], trigger: CompactionTrigger, result: TurnResult
    ) -> None:
        started = time.perf_counter()
        compaction = await self.compact(context, trigger)
        result.wait_seconds += time.perf_counter() - started
        result.compactions.append(compaction)

    async def _call_model(self, context: list[Message]) -> ModelResponse:
        schemas = self.tools.schemas() or None
        reply_stream.model_call_started()
        response = await self.provider_session.complete(
            self.marked_history(context), tools=schemas, max_tokens=self.settings.max_tokens
        )
        self.engine.update_from_response(response.usage)
        await self.recorder.record_usage(response.usage, "chat")
        return response

    def marked_history(self, context: Sequence[Message]) -> MarkedHistory:
        """The context with its cache breakpoints laid over it (nothing of it copied)."""
        policy = self.settings.cache_policy
        if policy is None or not policy.enabled:
            return MarkedHistory(context)
        return MarkedHistory(
            context,
            cache_breakpoints(context, self.settings.marker_ttl(), policy.native_anthropic),
        )

    def build_request(self, context: Sequence[Message]) -> list[Message]:
        """The message list sent to the provider: the context with cache breakpoints."""
        return self.marked_history(context).materialize()

    async def _run_tools(self, tool_calls: list[dict[str, Any]]) -> list[Message]:
        calls = [(c.get("id", ""), c.get("function", {})) for c in tool_calls]
        reply_stream.tools_started([str(fn.get("name", "")) for _, fn in calls])
        try:
            outputs = await asyncio.gather(
                *(self.tools.call(fn.get("name", ""), fn.get("arguments")) for _, fn in calls)
            )
        except asyncio.CancelledError:
            # /stop while tools run: answer every call so the stored session stays valid.
            stubs = [
                _tool_message(cid, fn.get("name", ""), CANCELLED_TOOL_RESULT) for cid, fn in calls
            ]
            await asyncio.shield(self.recorder.record_messages(stubs))
            raise
        return [
            _tool_message(cid, fn.get("name", ""), out)
            for (cid, fn), out in zip(calls, outputs, strict=True)
        ]


def _tool_message(call_id: str, name: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def _is_empty(response: ModelResponse) -> bool:
    """An answer with neither text nor tool calls (no content blocks, or only blank text)."""
    return not response.tool_calls and not reply_text(response.message).strip()


def missing_tool_results(context: Sequence[Message]) -> list[Message]:
    """Stub results for tool calls at the end of ``context`` that were never answered
    (a crash or ``/stop`` between the call and its results)."""
    answered: set[str] = set()
    for message in reversed(context):
        role = message.get("role")
        if role == "tool":
            answered.add(str(message.get("tool_call_id")))
            continue
        if role == "assistant" and message.get("tool_calls"):
            return [
                _tool_message(
                    c.get("id", ""), c.get("function", {}).get("name", ""), MISSING_TOOL_RESULT
                )
                for c in message["tool_calls"]
                if str(c.get("id")) not in answered
            ]
        return []
    return []
