"""The agent loop: one user turn from message to final answer, tools and compaction included.

A turn is: system prompt + in-context history + the new user message -> model -> tool calls
executed and fed back -> ... -> final answer or the iteration budget. Before every model call
the loop asks its :class:`CompactionGate` whether to compact now (the host's scheduler, which
owns every compaction decision; by default the engine's threshold). Every change of the context
goes through the session's :class:`~agent.session_context.SessionContext`, which stores it as
it happens, so a crash or ``/stop`` leaves the stored session consistent. A live view of the
reply is the turn's ``observer``, handed in by whoever starts the turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agent.engines.context_engine import ContextEngine
from agent.engines.toolkit.tool_output_pruning import first_clearable_in_turn
from agent.prompt_caching import CachePolicy, MarkedHistory, cache_breakpoints
from agent.reply_stream import GuardedObserver, ReplyObserver
from agent.session_context import SessionContext
from agent.session_context import TurnRecorder as TurnRecorder  # re-exported
from agent.spans import NO_SPANS, AttributeValue, Spans
from agent.tools.approvals import (
    ALLOWING,
    NO_ONE_TO_ASK_RESULT,
    NOT_ASKED_RESULT,
    ApprovalPort,
    ToolCallPreview,
    refusal_result,
)
from agent.tools.call_log import ToolCallLog, refusal_outcome, result_outcome
from agent.tools.registry import ToolContent, ToolRegistry, parse_arguments
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
    reply_text,
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
AGAIN_SUFFIX = "_again"
"""Added to the id of a call made again after a crash (ids stay ``[a-zA-Z0-9_-]+``)."""
ITERATION_LIMIT_NOTE = (
    "I stopped after {n} steps on this request without finishing it: that is the limit for one "
    'message (agent.max_iterations). Everything so far is kept. Send "continue" and I will '
    "pick up where I left off."
)
NO_ANSWER_NOTICE = (
    "Sorry, the model sent back an empty answer, twice. Your message is saved; "
    "please try again in a moment."
)
EMPTY_ANSWER_RETRIES = 1
"""How often an empty or cut-off answer is asked for again before the user gets the notice."""

StopReason = Literal["final", "max_iterations", "provider_error", "prompt_too_long", "no_answer"]


ESCALATED_MAX_TOKENS = 16_000
"""The answer budget of a call asked again after its answer hit ``max_tokens`` (a whole new
file, a long edit): billed by what is written, so only a cut answer costs twice."""
ESCALATION_MARGIN_TOKENS = 256
"""Kept free of the window beside the prompt and the larger budget."""
CUT_CALL_NOTICE = (
    "My answer ran out of room while I was writing a tool call, so I did not make it. "
    "Ask me to go on in smaller steps."
)


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
    max_iterations: int = 90
    context_length: int | None = None
    """The model's window: an answer cut at ``max_tokens`` is asked again with a larger
    budget only within it (None: never asked again)."""
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


def _drop_cut_call(response: ModelResponse) -> None:
    """An answer cut at ``max_tokens`` even with the larger budget: its last tool call is the
    one cut short (its input incomplete), so it is not made; the calls before it are whole."""
    calls = response.tool_calls
    if not calls:
        return
    log.warning("answer cut at max_tokens inside a tool call; that call is not made")
    if len(calls) > 1:
        response.message["tool_calls"] = calls[:-1]
        return
    response.message.pop("tool_calls", None)
    if not response.message.get("content"):
        response.message["content"] = CUT_CALL_NOTICE


def _failure_reason(exc: ProviderError) -> str:
    """What the user is told went wrong: a connection error is not called an overload."""
    if isinstance(exc, ProviderConnectionError):
        return "its endpoint could not be reached"
    if isinstance(exc, ProviderTimeoutError):
        return "it did not answer in time"
    if exc.status == 429:
        return "the rate limit was reached"
    return "the service is overloaded" if exc.retryable else "the request failed"


class CompactionGate(Protocol):
    """The one owner of "compact now?", asked before every model call of a turn."""

    async def before_call(self) -> CompactionTrigger | None:
        """The trigger to compact with before this call, None to call the model as it is
        (which includes a compaction started beside the turn). The gate may apply a
        compaction that finished beside the turn itself, through the session's context."""


class ThresholdGate:
    """Without a host that schedules compactions: compact at the engine's threshold, before
    the call (the turn waits for the summary)."""

    def __init__(self, context: SessionContext) -> None:
        self._context = context

    async def before_call(self) -> CompactionTrigger | None:
        """``agent`` when the engine says the prompt is past its threshold."""
        engine = self._context.engine
        return "agent" if engine.should_compress(self._context.prompt_tokens) else None


class AgentLoop:
    """Runs turns for one session over a context list it keeps up to date in place."""

    def __init__(
        self,
        context: SessionContext,
        tools: ToolRegistry,
        settings: LoopSettings | None = None,
        *,
        gate: CompactionGate | None = None,
        spans: Spans = NO_SPANS,
    ) -> None:
        self.context = context
        self.tools = tools
        self.settings = settings or LoopSettings()
        self.gate: CompactionGate = gate or ThresholdGate(context)
        """Asked before every model call whether to compact first."""
        self.spans = spans
        """Marks each model call, tool call and compaction for tracing."""

    @property
    def engine(self) -> ContextEngine:
        """The session's context engine."""
        return self.context.engine

    @property
    def provider_name(self) -> str:
        """The name of the provider the session calls (for log lines)."""
        return self.context.provider_session.provider.name

    def current_prompt_tokens(self) -> int | None:
        """The best knowledge of the next prompt's size: API-reported plus what came since."""
        return self.context.prompt_tokens

    # -- one turn ------------------------------------------------------------------------
    async def run_turn(
        self,
        user_message: Message | None,
        *,
        observer: ReplyObserver | None = None,
        approvals: ApprovalPort | None = None,
        ask_again: Sequence[dict[str, Any]] = (),
    ) -> TurnResult:
        """Run one turn on the session's context (updated in place, system prompt first).

        ``user_message`` None runs the turn for the user message(s) already at the end of the
        context (appended by the host, or stored by an interrupted turn). ``observer`` is told
        about the reply while it is written (:mod:`agent.reply_stream`). ``approvals`` asks
        the user before a call to a tool marked ``ask`` (without it, such calls are not run).
        ``ask_again``: calls a crash interrupted while they waited for approval; the turn
        makes them again (stored as a call of its own) before it asks the model.
        """
        watcher = GuardedObserver(observer) if observer is not None else None
        result = TurnResult(reply="", stop_reason="final")
        if user_message is not None:
            await self.context.append([user_message])
            result.new_messages.append(user_message)
        if ask_again:
            await self._make_again(ask_again, watcher, approvals, result)
        emergency_used = False
        empty_answers = 0
        iteration = 0
        budget = self.settings.max_tokens
        while iteration < self.settings.max_iterations:
            trigger = await self.gate.before_call()
            if trigger is not None:
                await self._compact_into(trigger, result)
            started = time.perf_counter()
            response: ModelResponse | None
            try:
                response = await self._call_model(watcher, budget)
            except PromptTooLongError as exc:
                result.wait_seconds += time.perf_counter() - started
                if emergency_used:
                    log.warning("prompt still too long after emergency compaction: %s", exc)
                    result.reply, result.stop_reason = TOO_LONG_APOLOGY, "prompt_too_long"
                    return result
                emergency_used = True
                await self._compact_into("emergency", result)
                continue
            except IncompleteResponseError as exc:
                log.warning("model answer incomplete (%s)", exc)
                response = None
            except ProviderError as exc:
                log.error("model call failed for provider %s: %s", self.provider_name, exc)
                reason = _failure_reason(exc)
                result.reply, result.stop_reason = APOLOGY.format(reason=reason), "provider_error"
                return result
            result.wait_seconds += time.perf_counter() - started
            if response is not None:
                result.usages.append(response.usage)
            if response is not None and (larger := self._larger_budget(response, budget)):
                # Cut off at max_tokens (a new file, a long edit): asked again with room for
                # it, instead of a call cut in half or a half answer given as the reply.
                log.warning("answer cut at max_tokens %d; asking again with %d", budget, larger)
                budget = larger
                continue
            if response is not None and response.stop_reason == "max_tokens":
                _drop_cut_call(response)
            if response is None or _is_empty(response):
                # Nothing to show or store: ask again once, then tell the user (never silence).
                empty_answers += 1
                if empty_answers > EMPTY_ANSWER_RETRIES:
                    result.reply, result.stop_reason = NO_ANSWER_NOTICE, "no_answer"
                    return result
                log.warning("model gave no answer; asking again")
                continue
            iteration += 1
            await self.context.append([response.message])
            result.new_messages.append(response.message)
            if not response.tool_calls:
                result.reply = reply_text(response.message)
                return result
            tool_messages = await self._run_tools(response.tool_calls, watcher, approvals)
            await self.context.append(tool_messages)
            result.new_messages.extend(tool_messages)
        return await self._stop_at_limit(result)

    async def _stop_at_limit(self, result: TurnResult) -> TurnResult:
        """The turn reached ``max_iterations``: its reply says so and how to go on, stored as
        the assistant's answer (the context stays valid and whole, so a "continue" resumes the
        work where it stopped)."""
        notice = ITERATION_LIMIT_NOTE.format(n=self.settings.max_iterations)
        message: Message = {"role": "assistant", "content": notice}
        await self.context.append([message])
        result.new_messages.append(message)
        log.info("turn stopped at the step limit (%d)", self.settings.max_iterations)
        requests = len(result.usages)
        await self.context.recorder.record_turn_stop("max_iterations", requests)
        result.reply, result.stop_reason = notice, "max_iterations"
        return result

    async def _make_again(
        self,
        calls: Sequence[dict[str, Any]],
        watcher: GuardedObserver | None,
        approvals: ApprovalPort | None,
        result: TurnResult,
    ) -> None:
        """Repeat interrupted calls under new ids: asked for approval again, never run
        unapproved (the old ids were answered with stubs when the session loaded)."""
        again = [{**call, "id": f"{call.get('id', '')}{AGAIN_SUFFIX}"} for call in calls]
        message: Message = {"role": "assistant", "content": "", "tool_calls": again}
        await self.context.append([message])
        result.new_messages.append(message)
        tool_messages = await self._run_tools(again, watcher, approvals)
        await self.context.append(tool_messages)
        result.new_messages.extend(tool_messages)

    async def _compact_into(self, trigger: CompactionTrigger, result: TurnResult) -> None:
        started = time.perf_counter()
        with self.spans.span("compaction", {"hermes.compaction.trigger": trigger}) as span:
            compaction = await self.context.compact(trigger)
            span.set(compaction_attributes(compaction))
        result.wait_seconds += time.perf_counter() - started
        result.compactions.append(compaction)

    def _larger_budget(self, response: ModelResponse, budget: int) -> int | None:
        """The answer budget to ask again with when ``response`` stopped at ``budget`` tokens
        (:data:`ESCALATED_MAX_TOKENS`, within what the window leaves after the prompt), None
        when it did not or no larger budget fits."""
        window = self.settings.context_length
        if response.stop_reason != "max_tokens" or window is None:
            return None
        usage = response.usage
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        room = window - prompt - ESCALATION_MARGIN_TOKENS
        larger = min(ESCALATED_MAX_TOKENS, room)
        return larger if larger > budget else None

    async def _call_model(self, watcher: GuardedObserver | None, budget: int) -> ModelResponse:
        schemas = self.tools.schemas() or None
        if watcher is not None:
            watcher.model_call_started()
        provider = self.context.provider_session.provider
        with self.spans.span(
            f"chat {provider.model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": provider.name,
                "gen_ai.request.model": provider.model,
                "gen_ai.request.max_tokens": budget,
            },
        ) as span:
            response = await self.context.provider_session.complete(
                self.marked_history(self.context.messages),
                tools=schemas,
                max_tokens=budget,
                on_text=watcher.text_delta if watcher is not None else None,
            )
            span.set(usage_attributes(response.usage))
        self.context.rewrite_point = None  # the prefix up to it is cached again
        self.engine.update_from_response(response.usage)
        await self.context.recorder.record_usage(response.usage, "chat")
        return response

    def marked_history(self, context: Sequence[Message]) -> MarkedHistory:
        """The context with its cache breakpoints laid over it (nothing of it copied)."""
        policy = self.settings.cache_policy
        if policy is None or not policy.enabled:
            return MarkedHistory(context)
        point = self.context.rewrite_point
        anchor = point - 1 if point is not None and point > 0 else None
        upcoming = first_clearable_in_turn(context)
        hold = upcoming - 1 if upcoming is not None and upcoming > 0 else None
        return MarkedHistory(
            context,
            cache_breakpoints(
                context,
                self.settings.marker_ttl(),
                policy.native_anthropic,
                anchor=anchor,
                hold=hold,
            ),
        )

    def build_request(self, context: Sequence[Message]) -> list[Message]:
        """The message list sent to the provider: the context with cache breakpoints."""
        return self.marked_history(context).materialize()

    async def _run_tools(
        self,
        tool_calls: list[dict[str, Any]],
        watcher: GuardedObserver | None,
        approvals: ApprovalPort | None = None,
    ) -> list[Message]:
        calls = [(c.get("id", ""), c.get("function", {})) for c in tool_calls]
        if watcher is not None:
            watcher.tools_started([str(fn.get("name", "")) for _, fn in calls])
        try:
            outputs = await asyncio.gather(
                *(
                    self._call_tool(cid, str(fn.get("name", "")), fn.get("arguments"), approvals)
                    for cid, fn in calls
                )
            )
        except asyncio.CancelledError:
            # /stop while tools run: answer every call so the stored session stays valid.
            stubs = [
                _tool_message(cid, fn.get("name", ""), CANCELLED_TOOL_RESULT) for cid, fn in calls
            ]
            await asyncio.shield(self.context.recorder.record_messages(stubs))
            raise
        return [
            _tool_message(cid, fn.get("name", ""), out)
            for (cid, fn), out in zip(calls, outputs, strict=True)
        ]

    async def _call_tool(
        self,
        call_id: str,
        name: str,
        arguments: str | dict[str, Any] | None,
        approvals: ApprovalPort | None,
    ) -> ToolContent:
        """Run one call (in its span), after the user's approval when its tool asks for one."""
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
        }
        with self.spans.span(f"execute_tool {name}", attributes):
            async with ToolCallLog(self.context.recorder, name) as call:  # counted for /usage
                if self.tools.needs_approval(name):
                    if approvals is None:
                        return call.not_run("not_asked", NO_ONE_TO_ASK_RESULT)
                    try:
                        args = parse_arguments(arguments)
                    except ValueError as exc:
                        return call.not_run("error", f"Error: {exc}")
                    try:
                        decision = await approvals.decide(ToolCallPreview(name, args))
                    except Exception as exc:  # the prompt could not be posted: not run
                        log.warning("tool %s: approval not asked (%s)", name, type(exc).__name__)
                        return call.not_run("not_asked", NOT_ASKED_RESULT)
                    log.info("tool %s: approval %s", name, decision)
                    if decision not in ALLOWING:
                        return call.not_run(refusal_outcome(decision), refusal_result(decision))
                    arguments = args
                return await call.run(self.tools.call(name, arguments))


def usage_attributes(usage: Usage) -> dict[str, AttributeValue]:
    """A model call's usage as GenAI span attributes (input: the whole prompt, cached or not)."""
    return {
        "gen_ai.response.model": usage.model,
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read_input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation_input_tokens": usage.cache_write_tokens,
    }


def compaction_attributes(compaction: CompactionResult) -> dict[str, AttributeValue]:
    """What a compaction did, for its span."""
    return {
        "hermes.compaction.outcome": compaction.outcome,
        "hermes.compaction.tokens_before": compaction.tokens_before,
        "hermes.compaction.tokens_after": compaction.tokens_after,
    }


def _tool_message(call_id: str, name: str, content: ToolContent) -> Message:
    """A tool's result as a message; an error result carries ``is_error`` (the provider's
    error flag, e.g. Anthropic's ``tool_result.is_error``; stored with the message)."""
    message: Message = {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}
    if result_outcome(content) == "error":
        message["is_error"] = True
    return message


def _is_empty(response: ModelResponse) -> bool:
    """An answer with neither text nor tool calls (no content blocks, or only blank text)."""
    return not response.tool_calls and not reply_text(response.message).strip()


def unanswered_tool_calls(context: Sequence[Message]) -> list[dict[str, Any]]:
    """The tool calls at the end of ``context`` that have no result (a crash or ``/stop``
    between the call and its results)."""
    answered: set[str] = set()
    for message in reversed(context):
        role = message.get("role")
        if role == "tool":
            answered.add(str(message.get("tool_call_id")))
            continue
        if role == "assistant" and message.get("tool_calls"):
            return [c for c in message["tool_calls"] if str(c.get("id")) not in answered]
        return []
    return []


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
