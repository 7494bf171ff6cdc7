"""The records the compaction scheduler keeps: a compaction running beside the turns, the idle
point of a gap, what happened before a turn, and a log of what the policy did."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from agent.engines.context_engine import ContextEngine
from agent.policy.context_policy import Decision
from agent.policy.session_policy import PolicyCall
from agent.types import CompactionResult, CompactionTrigger, Message


@dataclass(eq=False)
class PendingCompaction:
    """A policy compaction in flight: its decision, the context it started from, its task."""

    trigger: CompactionTrigger
    call: PolicyCall | None
    """The policy's decision (None for a threshold compaction, which has no cost test)."""
    snapshot: list[Message]
    engine: ContextEngine
    task: asyncio.Task[CompactionResult]
    visit_start: float | None = None
    """Platform time of the message that started the visit it serves (None: not yet)."""

    def is_prefix_of(self, context: list[Message]) -> bool:
        """Whether the context still starts with exactly the snapshot's messages."""
        if len(context) < len(self.snapshot):
            return False
        return all(a is b for a, b in zip(self.snapshot, context, strict=False))


@dataclass(slots=True)
class IdlePoint:
    """The instant, by message times, at which a session left alone counts as idle: its last
    model call (its newest message) plus the cache TTL and margins."""

    at: float
    last_call_at: float
    decided: bool = False
    """The idle decision was made (by the timer, or by the message that came after it)."""
    started: bool = False
    """It paid: an ``idle`` compaction was started for this gap."""


@dataclass(slots=True)
class BeforeTurn:
    """What the policy did at a message: the compaction applied (if any) and the wait."""

    applied: CompactionResult | None = None
    waited_seconds: float = 0.0


@dataclass
class SchedulerLog:
    """Counts for ``/status`` and tests: what the policy started, applied and dropped.

    Only names are kept (triggers, reasons), never a :class:`CompactionResult`: a result holds
    the whole context it made, so a log of results kept every compacted-away message of a
    long-lived session alive (2.2 MB per 1,000 messages under load).
    """

    started: list[str] = field(default_factory=list)
    applied: list[CompactionTrigger] = field(default_factory=list)
    """The trigger of each policy compaction applied."""
    dropped: list[str] = field(default_factory=list)
    step_decisions: list[StepDecision] = field(default_factory=list)
    """Every decision on clearing used outputs inside a turn, with its numbers (the newest
    ``STEP_DECISIONS_KEPT``)."""

    def note_step(self, decision: StepDecision) -> None:
        """Keep a decision made inside a turn (a bounded list: a session runs for months)."""
        self.step_decisions.append(decision)
        del self.step_decisions[:-STEP_DECISIONS_KEPT]


STEP_DECISIONS_KEPT = 100


@dataclass(frozen=True, slots=True)
class StepDecision:
    """Whether clearing the used tool outputs before a request of a turn paid, and on what."""

    requests_done: int
    """Requests the turn had made."""
    remaining_requests: float
    """Requests it was still expected to make (the next one included)."""
    saved_tokens: int
    rewritten_tokens: int
    decision: Decision
