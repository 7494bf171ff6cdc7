"""The lossless context engine: every message kept, old turns summarised into a DAG.

A compaction (1) keeps a fresh tail of the context verbatim, (2) covers every original message
before that tail not yet summarised with leaf nodes, chunk by chunk, (3) condenses nodes upward
while a level fills up or the summaries outgrow their budget, and (4) assembles system prompt,
root nodes and tail. Summaries come from the auxiliary model with an escalation that always
finishes, so a compaction never fails and never drops a message without a node covering it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from agent.engines.context_engine import CallLLM, ContextEngine, EngineStatus
from agent.engines.toolkit.summary_prompt import serialize_message
from agent.engines.toolkit.tool_output_pruning import tool_names_by_call_id
from agent.tokens import cache_message_tokens, cache_messages_tokens, count_text_tokens
from agent.types import (
    CompactionOutcome,
    CompactionResult,
    CompactionTrigger,
    EngineState,
    Message,
)

from .assembly import assemble, choose_tail_start, split_context
from .config import LcmSettings
from .dag import Node, SourceMessage, chunk_for_leaves, plan_condensation, roots, uncovered_before
from .state import LcmState
from .store import LcmStore, NewNode
from .summarize import Summarizer, SummaryText, split_open_items
from .tools import TOOL_SCHEMAS, LcmTools

log = logging.getLogger(__name__)

LEAF_SUMMARY_RATIO = 0.35
"""A leaf summary aims at most at this share of the messages it covers."""
CONDENSED_SUMMARY_RATIO = 0.6
"""A condensed summary aims at most at this share of its children together."""
CHILD_SEPARATOR = "\n\n--- next part ---\n\n"
DEGRADED_NOTICE = (
    "Note: part of the earlier conversation was summarised without the summary model "
    "({detail}); nothing is lost: lcm_grep and lcm_expand still reach every original message."
)


class LcmEngine(ContextEngine):
    """``context.engine: lcm``: lossless context management over the project's store."""

    name = "lcm"
    state_type = LcmState

    def __init__(
        self,
        *,
        context_length: int,
        settings: LcmSettings,
        store: LcmStore,
        call_llm: CallLLM | None,
        summary_context_length: int | None = None,
        enabled: bool = True,
        collect_durable_facts: bool = False,
    ) -> None:
        super().__init__()
        self.context_length = context_length
        self.settings = settings
        self.store = store
        self.enabled = enabled
        self._call_llm = call_llm
        self._summary_window = summary_context_length or context_length
        self.tools = LcmTools(store, settings)
        self.session_id: int | None = None
        self.compaction_count = 0
        self._last_outcome: str | None = None
        self.collect_durable_facts = collect_durable_facts
        """Whether leaf summaries also ask for durable facts (the host keeps them in memory)."""

    @property
    def threshold_tokens(self) -> int:
        """The prompt size at which the engine compacts."""
        return int(self.context_length * self.settings.threshold)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Whether the prompt (given, else the last API-reported size) reached the threshold."""
        tokens = prompt_tokens if prompt_tokens is not None else self.last_prompt_tokens
        return self.enabled and tokens is not None and tokens >= self.threshold_tokens

    # -- compaction -----------------------------------------------------------------------
    async def compact(
        self,
        messages: list[Message],
        trigger: CompactionTrigger,
        focus_topic: str | None = None,
    ) -> CompactionResult:
        """Summarise what lies before the fresh tail into the DAG and rebuild the context."""
        tokens_before = cache_messages_tokens(messages)
        if self.session_id is None:
            return self._skipped(messages, trigger, tokens_before, "no session started")
        system, live = split_context(messages)
        sizes = [cache_message_tokens(m) for m in live]
        start = choose_tail_start(
            live,
            sizes,
            count=self.settings.fresh_tail_count,
            budget=self.settings.fresh_tail_tokens,
        )
        tail = live[start:]
        boundary = min((int(m["_id"]) for m in tail if "_id" in m), default=None)
        summarizer = Summarizer(
            self._call_llm, self._summary_window, durable_facts=self.collect_durable_facts
        )
        nodes = await self.store.nodes([self.session_id])
        sources = await self.store.sources(self.session_id)
        pending = uncovered_before(sources, nodes, boundary)
        names = tool_names_by_call_id([s.message for s in sources])
        made: list[tuple[Node, SummaryText]] = []
        for chunk in chunk_for_leaves(pending, self.settings.leaf_chunk_tokens):
            made.append(await self._add_leaf(chunk, names, summarizer))
            nodes.append(made[-1][0])
        nodes, condensed = await self._condense(nodes, summarizer)
        made += condensed
        new_context = assemble(system, roots(nodes), tail)
        if _signature(new_context) == _signature(messages):
            return self._skipped(messages, trigger, tokens_before, "nothing to summarise")
        return self._finish(messages, new_context, made, trigger, tokens_before)

    async def _add_leaf(
        self, chunk: Sequence[SourceMessage], names: dict[str, str], summarizer: Summarizer
    ) -> tuple[Node, SummaryText]:
        """Summarise one chunk of original messages into a stored leaf node."""
        material = "\n\n".join(serialize_message(s.message, names) for s in chunk)
        source_tokens = sum(s.tokens for s in chunk)
        target = min(self.settings.leaf_summary_tokens, int(source_tokens * LEAF_SUMMARY_RATIO))
        summary = await summarizer.summarize(
            material, source_tokens, max(1, target), condensed=False
        )
        node = await self.store.add_node(
            _new_node(self.session_id or 0, 0, summary, source_tokens, chunk=chunk)
        )
        return node, summary

    async def _condense(
        self, nodes: list[Node], summarizer: Summarizer
    ) -> tuple[list[Node], list[tuple[Node, SummaryText]]]:
        """Condense roots upward until no level is full and the summaries fit their budget."""
        made: list[tuple[Node, SummaryText]] = []
        while group := plan_condensation(
            roots(nodes), self.settings.condense_fanout, self.settings.summary_budget_tokens
        ):
            material = CHILD_SEPARATOR.join(child.content for child in group)
            input_tokens = sum(child.token_count for child in group)
            target = min(
                self.settings.condensed_summary_tokens, int(input_tokens * CONDENSED_SUMMARY_RATIO)
            )
            summary = await summarizer.summarize(
                material, input_tokens, max(1, target), condensed=True
            )
            node = await self.store.add_node(
                _new_node(self.session_id or 0, 0, summary, input_tokens, children=group)
            )
            made.append((node, summary))
            nodes = await self.store.nodes([self.session_id or 0])
        return nodes, made

    def _finish(
        self,
        before: Sequence[Message],
        after: list[Message],
        made: Sequence[tuple[Node, SummaryText]],
        trigger: CompactionTrigger,
        tokens_before: int,
    ) -> CompactionResult:
        """Count the compaction and describe it."""
        degraded = [s for _, s in made if s.mode == "truncated"]
        outcome: CompactionOutcome = "fallback" if degraded else "summarized"
        kept = {m["_id"] for m in after if "_id" in m}
        first = 1 if before and before[0].get("role") == "system" else 0
        gone = [m["_id"] for m in before[first:] if "_id" in m and m["_id"] not in kept]
        detail = f"{sum(n.is_leaf for n, _ in made)} leaf and " + (
            f"{sum(not n.is_leaf for n, _ in made)} condensed node(s) written"
        )
        self.compaction_count += 1
        self._last_outcome = outcome
        return CompactionResult(
            messages=after,
            outcome=outcome,
            trigger=trigger,
            tokens_before=tokens_before,
            tokens_after=cache_messages_tokens(after),
            summary=next(
                (str(m.get("content") or "") for m in after if m.get("_kind") == "summary"), None
            ),
            degraded=bool(degraded),
            detail=detail,
            first_compacted_id=gone[0] if gone else None,
            last_compacted_id=gone[-1] if gone else None,
            user_notice=DEGRADED_NOTICE.format(detail=degraded[0].detail) if degraded else None,
            engine_state=self.get_state(),
            durable_facts=_facts_of(summary for _, summary in made),
        )

    def _skipped(
        self, messages: Sequence[Message], trigger: CompactionTrigger, tokens: int, detail: str
    ) -> CompactionResult:
        self._last_outcome = "skipped"
        return CompactionResult(
            messages=list(messages),
            outcome="skipped",
            trigger=trigger,
            tokens_before=tokens,
            tokens_after=tokens,
            detail=detail,
            engine_state=self.get_state(),
        )

    async def build_context(self, messages: Sequence[Message]) -> list[Message]:
        """The context the current store gives for ``messages`` without summarising anything:
        system prompt, root nodes, and every live message after the last covered one."""
        system, live = split_context(messages)
        nodes = await self.store.nodes([self.session_id or 0])
        covered = max((n.last_message_id for n in nodes if n.is_leaf), default=0)
        tail = [m for m in live if int(m.get("_id", covered + 1)) > covered]
        return assemble(system, roots(nodes), tail)

    # -- tools, session, state --------------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """``lcm_grep``, ``lcm_describe`` and ``lcm_expand``."""
        return [dict(schema) for schema in TOOL_SCHEMAS]

    async def handle_tool_call(self, name: str, args: dict[str, Any]) -> str:
        """Run one of the engine's tools for the current session."""
        if self.session_id is None:
            return f"{name}: no session is open"
        return await self.tools.call(self.session_id, name, args or {})

    async def forget(self, session_ids: Sequence[int], message_ids: Sequence[int]) -> None:
        """The DAG and search rows of a user who asked to be forgotten."""
        await self.store.forget(session_ids, message_ids)

    async def on_session_start(self, session_id: int, state: EngineState) -> None:
        """Remember the session the engine serves, and restore its counters."""
        self.session_id = session_id
        self.load_state(state)

    def get_state(self) -> LcmState:
        """Counters persisted with the session (the DAG itself lives in its own tables)."""
        return LcmState(lcm_compactions=self.compaction_count, last_outcome=self._last_outcome)

    def load_state(self, state: EngineState) -> None:
        """Restore :meth:`get_state` output; another engine's state keeps the defaults."""
        restored = LcmState.of(state)
        self.compaction_count = restored.lcm_compactions
        self._last_outcome = restored.last_outcome

    def get_status(self) -> EngineStatus:
        """Threshold, compactions so far and the last outcome."""
        status = super().get_status()
        status.update(
            threshold_tokens=self.threshold_tokens,
            compression_count=self.compaction_count,
            last_outcome=self._last_outcome,
        )
        return status


def _facts_of(summaries: Iterable[SummaryText]) -> list[str]:
    """The durable facts of the summaries written, each once, in order."""
    facts: list[str] = []
    for summary in summaries:
        facts += [fact for fact in summary.facts if fact not in facts]
    return facts


def _new_node(
    session_id: int,
    level: int,
    summary: SummaryText,
    source_tokens: int,
    *,
    chunk: Sequence[SourceMessage] = (),
    children: Sequence[Node] = (),
) -> NewNode:
    """The stored form of a leaf (over ``chunk``) or a condensed node (over ``children``)."""
    _, open_items = split_open_items(summary.text)
    if chunk:
        first_id, last_id, count = chunk[0].id, chunk[-1].id, len(chunk)
        first_at, last_at = chunk[0].created_at, chunk[-1].created_at
    else:
        first_id, last_id = children[0].first_message_id, children[-1].last_message_id
        count = sum(c.message_count for c in children)
        first_at, last_at = children[0].first_at, children[-1].last_at
        level = max(c.level for c in children) + 1
    return NewNode(
        session_id=session_id,
        level=level,
        first_message_id=first_id,
        last_message_id=last_id,
        message_count=count,
        first_at=first_at,
        last_at=last_at,
        token_count=count_text_tokens(summary.text),
        source_tokens=source_tokens,
        content=summary.text,
        completed_items=_section(summary.text, "### Done"),
        open_items=open_items,
        mode=summary.mode,
        child_ids=tuple(c.id for c in children),
    )


def _section(text: str, heading: str) -> str:
    """The lines under ``heading`` up to the next heading."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("#"):
            inside = line.strip().startswith(heading)
            continue
        if inside:
            lines.append(line)
    return "\n".join(lines).strip()


def _signature(messages: Sequence[Message]) -> list[tuple[Any, Any]]:
    return [(m.get("_id"), m.get("content") if "_id" not in m else None) for m in messages]
