"""The built-in context engine: a four-phase compressor that never loses context silently.

1. Old tool outputs outside the protected tail are cleared or de-duplicated (no model call).
2. Head (system prompt and first exchange), tail (by token budget) and middle are chosen without
   ever splitting a tool call from its results (:mod:`agent.engines.toolkit.boundaries`).
3. The middle is summarised by the auxiliary model in one structured request, updating the
   previous summary; in chunks when it does not fit; retried on transient errors; replaced by a
   deterministic extractive summary when the model stays unavailable (the user is told).
4. Head, summary and tail are joined, with orphaned tool calls and results repaired.

A compaction that would not make the prompt smaller returns its input unchanged. Originals always
stay in the store: changed messages are new dicts without ``"_id"``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.compressor.compressor_state import CompressorState
from agent.compressor.extractive_summary import extractive_summary
from agent.compressor.summary_budget import (
    COLD_PROTECT_LAST_N,
    COLD_TAIL_TOKENS,
    MIN_CHUNK_TOKENS,
    PRUNED_ONLY_RATIO,
    SUMMARY_MESSAGE_OVERHEAD_TOKENS,
    expected_summary_tokens,
    max_summary_tokens,
    summary_budget,
)
from agent.compressor.summary_requests import (
    SummaryUnavailableError,
    describe_failure,
    request_summary,
)
from agent.engines.context_engine import CallLLM, ContextEngine, EngineStatus
from agent.engines.toolkit.boundaries import (
    SUMMARY_KIND,
    SUMMARY_PREFIX,
    CompactionLayout,
    assemble_context,
    is_summary_message,
    last_user_index,
    plan_layout,
    summary_text,
    tail_start_by_budget,
)
from agent.engines.toolkit.durable_facts import split_durable_facts
from agent.engines.toolkit.summary_prompt import (
    build_summary_prompt,
    conversation_room,
    render_pieces,
    serialize_middle,
    take_chunk,
)
from agent.engines.toolkit.tool_output_pruning import (
    KEEP_RECENT_TOOL_RESULTS,
    is_clearable_input,
    is_clearable_output,
    prune_tool_outputs,
    tool_names_by_call_id,
    used_outputs_end,
)
from agent.tokens import cache_message_tokens, cache_messages_tokens, count_text_tokens
from agent.types import (
    COLD_TRIGGERS,
    CompactionEstimate,
    CompactionOutcome,
    CompactionResult,
    CompactionTrigger,
    EngineState,
    Message,
    PromptTooLongError,
    ProviderError,
)

log = logging.getLogger(__name__)

DEGRADED_NOTICE = (
    "⚠️ Context compaction ran without the summary model ({reason}). Older turns were condensed "
    "by extraction instead; nothing was deleted: the original messages are kept in the history."
)


@dataclass(slots=True)
class SummaryOutcome:
    """The text standing in for the middle and how it was obtained."""

    text: str
    outcome: CompactionOutcome
    degraded: bool = False
    detail: str = ""
    facts: list[str] = field(default_factory=list)
    """Durable facts the summary request returned beside the summary (when asked for)."""


class ContextCompressor(ContextEngine):
    """Compacts a session when its prompt reaches ``threshold`` of the context length."""

    name = "compressor"
    state_type = CompressorState
    compacts_in_background = True  # compact() only computes; the host stores what it applies

    def __init__(
        self,
        context_length: int,
        threshold: float = 0.50,
        target_ratio: float = 0.20,
        protect_last_n: int = 20,
        protect_first_n: int = 3,
        call_llm: CallLLM | None = None,
        *,
        enabled: bool = True,
        prune_tail: bool = True,
        summary_context_length: int | None = None,
        retry_delays: tuple[float, ...] = (2.0, 8.0, 20.0),
        cooldown_seconds: float = 600.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        collect_durable_facts: bool = False,
    ) -> None:
        super().__init__()
        self.context_length = context_length
        self.threshold = threshold
        self.target_ratio = target_ratio
        self.protect_last_n = protect_last_n
        self.protect_first_n = protect_first_n
        self.enabled = enabled
        self.prune_tail = prune_tail
        """Clear tool outputs in the protected tail beyond its token budget (the newest
        results always stay): in a long tool loop the last ``protect_last_n`` messages are
        mostly outputs the model has already used."""
        self.summary_context_length = summary_context_length
        self.threshold_tokens = int(context_length * threshold)
        self.tail_token_budget = int(self.threshold_tokens * target_ratio)
        self.max_summary_tokens = max_summary_tokens(context_length)
        self.compression_count = 0
        self.previous_summary: str | None = None
        self._call_llm = call_llm
        self._retry_delays = retry_delays
        self._cooldown_seconds = cooldown_seconds
        self._clock = clock
        self._sleep = sleep
        self._cooldown_until = 0.0
        self._system_note_added = False
        self._stall_floor: int | None = None
        self._scanned = 0
        """Context messages already looked at for clearable tool outputs..."""
        self._clearable: list[int] = []
        """...and the indices of those (results clearing could shorten), in order..."""
        self._large_inputs: set[str] = set()
        """...and the ids of the scanned calls whose inputs a clearing could shorten."""
        self._last_outcome: str | None = None
        self.collect_durable_facts = collect_durable_facts
        """Whether summary requests also ask for durable facts (the host keeps them)."""

    # -- when ---------------------------------------------------------------------------
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Whether the prompt is at the threshold and has grown since a compaction that could
        not bring it under (so a compaction that cannot help does not run in a loop)."""
        size = prompt_tokens or self.last_prompt_tokens
        if not self.enabled or not size or size < self.threshold_tokens:
            return False
        return self._stall_floor is None or size > self._stall_floor

    def summary_budget(self, content_tokens: int, *, cold: bool = False) -> int:
        """Output tokens allowed for a summary of ``content_tokens`` tokens."""
        return summary_budget(content_tokens, self.max_summary_tokens, cold=cold)

    def _plan(
        self, messages: Sequence[Message], sizes: Sequence[int], *, cold: bool
    ) -> CompactionLayout:
        """Head, middle and tail; a policy compaction keeps only a small tail."""
        return plan_layout(
            messages,
            sizes,
            protect_first_n=self.protect_first_n,
            protect_last_n=COLD_PROTECT_LAST_N if cold else self.protect_last_n,
            tail_token_budget=COLD_TAIL_TOKENS if cold else self.tail_token_budget,
            threshold_tokens=self.threshold_tokens,
            summary_reserve=self.max_summary_tokens + SUMMARY_MESSAGE_OVERHEAD_TOKENS,
        )

    def estimate_compaction(
        self, messages: Sequence[Message], trigger: CompactionTrigger
    ) -> CompactionEstimate | None:
        """What a policy compaction (``cold_start``, ``idle``) of ``messages`` would do, by the
        local token counts, before it runs; None when it would summarise nothing or cannot
        call the summary model (no model, or in cooldown)."""
        if trigger not in COLD_TRIGGERS or not self.enabled or self._call_llm is None:
            return None
        if self.cooldown_remaining() > 0:
            return None
        sizes = [cache_message_tokens(m) for m in messages]
        layout = self._plan(messages, sizes, cold=True)
        middle = layout.middle_indices()
        content = [i for i in middle if not is_summary_message(messages[i])]
        if not content or any(is_summary_message(m) for m in messages[layout.kept_after_summary :]):
            return None
        previous = self._previous_summary_in([messages[i] for i in middle])
        previous_tokens = count_text_tokens(previous) if previous else 0
        content_tokens = sum(sizes[i] for i in content)
        pruned = prune_tool_outputs(
            messages, self.protect_first_n, len(messages), attachments_end=layout.prune_end
        )
        kept_sizes = [
            size if new is old else cache_message_tokens(new)
            for size, new, old in zip(sizes, pruned, messages, strict=True)
        ]
        kept = sum(kept_sizes) - sum(kept_sizes[i] for i in middle)
        return CompactionEstimate(
            prompt_tokens=sum(sizes),
            kept_tokens=kept + SUMMARY_MESSAGE_OVERHEAD_TOKENS,
            summarized_tokens=content_tokens + previous_tokens,
            summary_tokens=expected_summary_tokens(content_tokens, previous_tokens),
            summary_budget=self.summary_budget(content_tokens, cold=True),
        )

    def cooldown_remaining(self) -> float:
        """Seconds until the summary model is tried again after a failure."""
        return max(0.0, self._cooldown_until - self._clock())

    # -- how ----------------------------------------------------------------------------
    async def compact(
        self,
        messages: list[Message],
        trigger: CompactionTrigger,
        focus_topic: str | None = None,
    ) -> CompactionResult:
        """Compact ``messages``; unchanged (``skipped``) when that would not be smaller."""
        if trigger == "prune":
            tokens = cache_messages_tokens(messages)
            skipped = SummaryOutcome("", "skipped", detail="no used tool output to clear")
            return self.prune_used(messages) or self._record(
                messages, messages, skipped, trigger, tokens, tokens
            )
        cold = trigger in COLD_TRIGGERS
        sizes = [cache_message_tokens(m) for m in messages]
        tokens_before = sum(sizes)
        stall_basis = max(self.current_prompt_tokens or 0, tokens_before)
        layout = self._plan(messages, sizes, cold=cold)
        names = tool_names_by_call_id(messages)
        # While the cache is cold anyway the tail's tool outputs go too: the model read them
        # visits ago, their text stays in the store, and each would be written again.
        prune_end = len(messages) if cold else self._prune_end(messages, sizes, layout)
        pruned = prune_tool_outputs(
            messages, self.protect_first_n, prune_end, names, attachments_end=layout.prune_end
        )
        middle = [messages[i] for i in layout.middle_indices()]
        content = [m for m in middle if not is_summary_message(m)]
        summary_kept = any(is_summary_message(m) for m in messages[layout.kept_after_summary :])
        pruned_enough = cache_messages_tokens(pruned) <= self.threshold_tokens * PRUNED_ONLY_RATIO
        # A policy compaction summarises even when pruning alone would do: the point is a
        # small prompt while the cache is cold anyway.
        if not content or summary_kept or (pruned_enough and not focus_topic and not cold):
            candidate, summary = pruned, SummaryOutcome("", "pruned_only")
        else:
            previous = self._previous_summary_in(middle)
            budget = self.summary_budget(cache_messages_tokens(content), cold=cold)
            summary = await self._summarize(
                content, previous, focus_topic, layout.pinned is not None, budget, names
            )
            candidate = self._assemble(pruned, layout, summary.text)
        tokens_after = cache_messages_tokens(candidate)
        if tokens_after >= tokens_before:
            summary = SummaryOutcome(
                "",
                "skipped",
                detail=f"not smaller ({tokens_after} >= {tokens_before} tokens); "
                f"context unchanged. {summary.detail}".strip(),
            )
            candidate, tokens_after = list(messages), tokens_before
        self._stall_floor = stall_basis if tokens_after >= self.threshold_tokens else None
        return self._record(messages, candidate, summary, trigger, tokens_before, tokens_after)

    def prune_used(self, messages: Sequence[Message]) -> CompactionResult | None:
        """Clear the tool outputs the model has used (see the engine contract): those before
        the last user message, and in the turn all but the newest few
        (``KEEP_RECENT_TOOL_RESULTS``) and those it has not seen yet."""
        if not self.enabled or not self.prune_tail:
            return None
        # The turn's request may sit in the head (right after a compaction): found anywhere;
        # the head's outputs stay protected by ``protect_first_n`` all the same.
        last_user = last_user_index(messages, 0) or 0
        end = used_outputs_end(messages, last_user, KEEP_RECENT_TOOL_RESULTS)
        if not self._clearable_before(messages, end):
            return None  # the per-turn path stays O(new messages) in a chat without tools
        pruned = prune_tool_outputs(
            messages,
            self.protect_first_n,
            end,
            attachments_end=0,  # photos stay until a compaction: people ask about them again
        )
        if all(new is old for new, old in zip(pruned, messages, strict=True)):
            return None
        before = cache_messages_tokens(messages)
        after = cache_messages_tokens(pruned)
        if after >= before:
            return None
        gone = _compacted_ids(messages, pruned)
        return CompactionResult(
            messages=pruned,
            outcome="pruned_only",
            trigger="prune",
            tokens_before=before,
            tokens_after=after,
            first_compacted_id=gone[0] if gone else None,
            last_compacted_id=gone[-1] if gone else None,
        )

    def _clearable_before(self, messages: Sequence[Message], end: int) -> bool:
        """Whether a tool result that clearing could shorten (its output, or its call's large
        input) lies before ``end``: kept incrementally (only messages appended since the last
        look are read; a compaction starts the scan over)."""
        if len(messages) < self._scanned:
            self._forget_scan()
        for index in range(max(self._scanned, self.protect_first_n), len(messages)):
            message = messages[index]
            role = message.get("role")
            if role == "assistant":
                calls = message.get("tool_calls") or []
                self._large_inputs.update(
                    str(call.get("id")) for call in calls if is_clearable_input(call)
                )
            elif role == "tool" and (
                is_clearable_output(message.get("content"))
                or str(message.get("tool_call_id")) in self._large_inputs
            ):
                self._clearable.append(index)
        self._scanned = len(messages)
        return bool(self._clearable) and self._clearable[0] < end

    def _forget_scan(self) -> None:
        self._scanned, self._clearable, self._large_inputs = 0, [], set()

    def note_compaction(self, result: CompactionResult) -> None:
        """Also start the scan for clearable outputs over: the context was replaced."""
        super().note_compaction(result)
        self._forget_scan()

    def _prune_end(
        self, messages: Sequence[Message], sizes: Sequence[int], layout: CompactionLayout
    ) -> int:
        """Where clearing tool outputs stops: the layout's protected tail, or (``prune_tail``)
        the start of the tail the token budget alone would keep."""
        if not self.prune_tail:
            return layout.prune_end
        by_budget = tail_start_by_budget(messages, sizes, layout.head_end, self.tail_token_budget)
        return max(layout.prune_end, by_budget)

    def _previous_summary_in(self, middle: Sequence[Message]) -> str | None:
        """The summary to update: the one in the compacted range, else the remembered one."""
        found = [summary_text(m) for m in middle if is_summary_message(m)]
        return found[-1] if found else self.previous_summary

    def _assemble(
        self, pruned: list[Message], layout: CompactionLayout, text: str
    ) -> list[Message]:
        """The new context; the system prompt gets the note at the first compaction only."""
        role = layout.summary_role or "user"
        summary: Message = {"role": role, "content": SUMMARY_PREFIX + text, "_kind": SUMMARY_KIND}
        return assemble_context(pruned, layout, summary, note=not self._system_note_added)

    def _record(
        self,
        messages: Sequence[Message],
        candidate: Sequence[Message],
        summary: SummaryOutcome,
        trigger: CompactionTrigger,
        tokens_before: int,
        tokens_after: int,
    ) -> CompactionResult:
        """Update the engine's state after a compaction attempt and describe it."""
        self._last_outcome = summary.outcome
        if summary.outcome != "skipped":
            self.compression_count += 1
            if summary.text:
                self.previous_summary = summary.text
            if any(m.get("_kind") == SUMMARY_KIND for m in candidate):
                self._system_note_added = self._system_note_added or bool(
                    messages and messages[0].get("role") == "system"
                )
        gone = _compacted_ids(messages, candidate)
        notice = None
        if summary.degraded:
            notice = DEGRADED_NOTICE.format(reason=summary.detail or "unavailable")
        return CompactionResult(
            messages=list(candidate),
            outcome=summary.outcome,
            trigger=trigger,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            summary=summary.text or None,
            degraded=summary.degraded,
            detail=summary.detail,
            first_compacted_id=gone[0] if gone else None,
            last_compacted_id=gone[-1] if gone else None,
            user_notice=notice,
            engine_state=self.get_state(),
            durable_facts=list(summary.facts) if summary.outcome != "skipped" else [],
        )

    # -- the summary model ----------------------------------------------------------------
    async def _summarize(
        self,
        content: list[Message],
        previous: str | None,
        focus_topic: str | None,
        pinned: bool,
        budget: int,
        names: dict[str, str],
    ) -> SummaryOutcome:
        """Summarise ``content`` (updating ``previous``), in chunks when needed; never fails."""
        call_llm = self._call_llm
        if call_llm is None:
            return self._fallback(content, previous, budget, names, "no summary model configured")
        if self.cooldown_remaining() > 0:
            reason = f"in cooldown for {self.cooldown_remaining():.0f} s after a failure"
            return self._fallback(content, previous, budget, names, reason)
        pieces = serialize_middle(content, names)
        limit = conversation_room(
            self.summary_context_length or self.context_length,
            budget,
            previous_summary=previous,
            focus_topic=focus_topic,
            pinned_request=pinned,
            durable_facts=self.collect_durable_facts,
        )
        running, calls, facts = previous, 0, []
        while pieces:
            if limit < MIN_CHUNK_TOKENS:
                rest = content[pieces[0].index :]
                return self._fallback(
                    rest, running, budget, names, "summary model context too small"
                )
            chunk, rest_pieces = take_chunk(pieces, limit)
            prompt = build_summary_prompt(
                render_pieces(chunk),
                previous_summary=running,
                focus_topic=focus_topic,
                pinned_request=pinned,
                durable_facts=self.collect_durable_facts,
            )
            try:
                reply = await request_summary(
                    call_llm, prompt, budget, self._retry_delays, self._sleep
                )
            except PromptTooLongError:
                limit //= 2  # our estimate was too low for the summary model: smaller chunks
                continue
            except (ProviderError, TimeoutError, SummaryUnavailableError) as exc:
                self._cooldown_until = self._clock() + self._cooldown_seconds
                rest = content[pieces[0].index :]
                return self._fallback(rest, running, budget, names, describe_failure(exc))
            running, found = (
                split_durable_facts(reply) if self.collect_durable_facts else (reply, [])
            )
            facts += [fact for fact in found if fact not in facts]
            calls += 1
            pieces = rest_pieces
        outcome: CompactionOutcome = "chunked" if calls > 1 else "summarized"
        return SummaryOutcome(
            running or "", outcome, detail=f"{len(content)} messages, {calls} call(s)", facts=facts
        )

    def _fallback(
        self,
        messages: Sequence[Message],
        previous: str | None,
        budget: int,
        names: dict[str, str],
        reason: str,
    ) -> SummaryOutcome:
        """The extractive summary, marked degraded so the user is told."""
        log.warning("compaction without the summary model: %s", reason)
        text = extractive_summary(
            messages, budget_tokens=budget, previous_summary=previous, tool_names=names
        )
        return SummaryOutcome(text, "fallback", degraded=True, detail=reason)

    # -- state ----------------------------------------------------------------------------
    def get_state(self) -> CompressorState:
        """Summary, counters, cooldown and loop guard: persisted with the session."""
        return CompressorState(
            previous_summary=self.previous_summary,
            compression_count=self.compression_count,
            cooldown_until=self._cooldown_until,
            system_note_added=self._system_note_added,
            stall_floor=self._stall_floor,
            last_outcome=self._last_outcome,
        )

    def load_state(self, state: EngineState) -> None:
        """Restore :meth:`get_state` output."""
        restored = CompressorState.of(state)
        self.previous_summary = restored.previous_summary
        self.compression_count = restored.compression_count
        self._cooldown_until = restored.cooldown_until
        self._system_note_added = restored.system_note_added
        self._stall_floor = restored.stall_floor
        self._last_outcome = restored.last_outcome

    def get_status(self) -> EngineStatus:
        """Status for ``/status``: threshold, compactions so far, cooldown, last outcome."""
        status = super().get_status()
        status.update(
            threshold_tokens=self.threshold_tokens,
            compression_count=self.compression_count,
            cooldown_remaining_seconds=round(self.cooldown_remaining()),
            last_outcome=self._last_outcome,
        )
        return status


def _compacted_ids(messages: Sequence[Message], candidate: Sequence[Message]) -> list[int]:
    """The stored ids of ``messages`` that ``candidate`` no longer holds, in order. The system
    prompt only gains a note; it is not part of what was compacted."""
    kept_ids = {m["_id"] for m in candidate if "_id" in m}
    first = 1 if messages and messages[0].get("role") == "system" else 0
    return [m["_id"] for m in messages[first:] if "_id" in m and m["_id"] not in kept_ids]
