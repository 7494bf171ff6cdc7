"""Policy compactions beside a session's turns: started when they pay, applied when it is safe.

A compaction by the context policy (``cold_start`` at a message after the cache expired,
``idle`` in the background once it expired) runs on a copy of the session's engine over a
snapshot of its context, so a turn can go on meanwhile. A message waits for it at most
``max_wait_seconds``; after that its turn runs on the context it has (which fits the window)
and the compaction is applied after the turn, only if the snapshot is still the start of the
context and it still pays, else dropped. The session's turns hold :attr:`lock`; so does
applying a compaction, so the context never changes under a running turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from agent.context_engine import ContextEngine
from agent.context_policy import COLD_MARGIN_SECONDS
from agent.loop import AgentLoop
from agent.session_clock import SessionClock
from agent.session_policy import PolicyCall, SessionPolicy
from agent.tokens import message_tokens
from agent.types import CompactionResult, Message

log = logging.getLogger(__name__)

IDLE_SLACK_SECONDS = 1.0
"""The idle check runs this long after the cache counts as cold, so it surely does."""

EngineCopy = Callable[[], ContextEngine]
"""Builds a fresh engine in the session engine's current state (for a background compaction)."""


@dataclass(eq=False)
class PendingCompaction:
    """A policy compaction in flight: its decision, the context it started from, its task."""

    call: PolicyCall
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
class BeforeTurn:
    """What the policy did at a message: the compaction applied (if any) and the wait."""

    applied: CompactionResult | None = None
    waited_seconds: float = 0.0


@dataclass
class SchedulerLog:
    """Counts for ``/status`` and tests: what the policy started, applied and dropped."""

    started: list[str] = field(default_factory=list)
    applied: list[CompactionResult] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


class CompactionScheduler:
    """Starts, waits for and applies one session's policy compactions."""

    def __init__(
        self,
        loop: AgentLoop,
        context: list[Message],
        policy: SessionPolicy,
        clock: SessionClock,
        engine_copy: EngineCopy,
    ) -> None:
        self.loop = loop
        self.context = context
        self.policy = policy
        self.clock = clock
        self._engine_copy = engine_copy
        self.lock = asyncio.Lock()
        """Held by every turn and by every change of the context from here."""
        self.log = SchedulerLog()
        self._pending: PendingCompaction | None = None
        self._idle_timer: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def pending(self) -> PendingCompaction | None:
        """The policy compaction in flight, if any."""
        return self._pending

    # -- at a message ----------------------------------------------------------------------
    async def before_turn(self, *, last_call_at: float | None, now: float) -> BeforeTurn:
        """At a new message (the caller holds :attr:`lock`; the message is in the context).

        A compaction already in flight (idle) is waited for; otherwise, after a gap past the
        TTL, one is started when it pays. Either is applied now if it finishes within the
        wait, else after the turn (if still valid).
        """
        self._cancel_idle_timer()
        pending = self._pending
        if pending is None:
            call = self.policy.decide(
                self.loop.engine,
                self.context,
                trigger="cold_start",
                prompt_tokens=self.loop.current_prompt_tokens(),
                last_call_at=last_call_at,
                now=now,
            )
            if call is None:
                return BeforeTurn()
            log.info("context policy, cold start: %s", call.decision.reason)
            if not call.decision.pays:
                return BeforeTurn()
            pending = self._start(call)
        if pending.visit_start is None:
            pending.visit_start = now
        started = time.perf_counter()
        if not pending.task.done():
            await asyncio.wait({pending.task}, timeout=self.policy.settings.max_wait_seconds)
        waited = time.perf_counter() - started
        if not pending.task.done():
            log.info("context policy: the summary is not ready; the turn runs without it")
            return BeforeTurn(waited_seconds=waited)
        return BeforeTurn(await self._finish(pending), waited)

    # -- when idle ---------------------------------------------------------------------------
    def schedule_idle(self) -> None:
        """After a turn: check again once the cache has gone cold (``idle`` compaction)."""
        self._cancel_idle_timer()
        if self.policy.settings.enabled_for("idle") and self.clock.newest is not None:
            self._idle_timer = asyncio.create_task(self._idle_after_ttl())

    async def _idle_after_ttl(self) -> None:
        newest = self.clock.newest
        assert newest is not None
        cold_at = newest + self.policy.ttl_seconds + COLD_MARGIN_SECONDS + IDLE_SLACK_SECONDS
        delay = cold_at - self.clock.now()
        if delay > 0:
            await asyncio.sleep(delay)
        await self.start_idle()

    async def start_idle(self) -> PendingCompaction | None:
        """Start an ``idle`` compaction if the cache is cold by now and it pays."""
        async with self.lock:
            if self._pending is not None:
                return None
            call = self.policy.decide(
                self.loop.engine,
                self.context,
                trigger="idle",
                prompt_tokens=self.loop.current_prompt_tokens(),
                last_call_at=self.clock.newest,
                now=self.clock.now(),
            )
            if call is None:
                return None
            log.info("context policy, idle: %s", call.decision.reason)
            return self._start(call) if call.decision.pays else None

    # -- running and applying ---------------------------------------------------------------
    def _start(self, call: PolicyCall) -> PendingCompaction:
        engine = self._engine_copy()
        snapshot = list(self.context)
        task = asyncio.create_task(engine.compact(list(snapshot), call.trigger))
        pending = PendingCompaction(call, snapshot, engine, task)
        self._pending = pending
        self.log.started.append(call.trigger)
        task.add_done_callback(lambda _: self._spawn(self._apply_when_safe(pending)))
        return pending

    async def _apply_when_safe(self, pending: PendingCompaction) -> None:
        async with self.lock:
            if self._pending is pending:
                await self._finish(pending)

    async def _finish(self, pending: PendingCompaction) -> CompactionResult | None:
        """Apply a finished compaction if still valid (the caller holds :attr:`lock`)."""
        self._pending = None
        reason = self._reject_reason(pending)
        if reason is not None:
            log.info("context policy: %s compaction dropped (%s)", pending.call.trigger, reason)
            self.log.dropped.append(reason)
            return None
        decision = pending.call.decision
        result = dataclasses.replace(
            pending.task.result(),
            estimated_saving_usd=decision.saving_usd,
            estimated_cost_usd=decision.cost_usd,
        )
        extra = self.context[len(pending.snapshot) :]
        if extra:
            result = dataclasses.replace(
                result,
                messages=[*result.messages, *extra],
                tokens_after=result.tokens_after + sum(message_tokens(m) for m in extra),
            )
        await self.loop.apply_compaction(self.context, result)
        self.loop.engine.load_state(pending.engine.get_state())
        self.log.applied.append(result)
        return result

    def _reject_reason(self, pending: PendingCompaction) -> str | None:
        task = pending.task
        if task.cancelled():
            return "cancelled"
        if task.exception() is not None:
            return f"failed: {task.exception()!r}"
        result = task.result()
        if result.outcome == "skipped":
            return "not smaller"
        if result.degraded:
            # Optional compactions never settle for the extractive fallback.
            return f"no summary model ({result.detail})"
        if not pending.is_prefix_of(self.context):
            return "the context changed meanwhile"
        extra = self.context[len(pending.snapshot) :]
        turns_done = sum(1 for m in extra if m.get("role") == "assistant")
        if turns_done:
            prompt = self.loop.current_prompt_tokens() or 0
            compacted = result.tokens_after + sum(message_tokens(m) for m in extra)
            visit_start = pending.visit_start if pending.visit_start is not None else 0.0
            if not self.policy.late_compaction_pays(prompt, compacted, turns_done, visit_start):
                return "too late to pay"
        return None

    async def settled(self) -> None:
        """Wait until no policy compaction is in flight or waiting to be applied."""
        while True:
            waiting = [*self._tasks]
            if self._pending is not None:
                waiting.append(self._pending.task)
            if not waiting:
                return
            await asyncio.wait(waiting)

    # -- housekeeping ----------------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None and not self._idle_timer.done():
            # Not from inside the timer itself: its own check is what runs.
            if self._idle_timer is not asyncio.current_task():
                self._idle_timer.cancel()
        self._idle_timer = None

    async def close(self) -> None:
        """Cancel the idle timer and any compaction in flight (the session is going away)."""
        tasks = [t for t in (self._idle_timer, *self._tasks) if t is not None]
        if self._pending is not None:
            tasks.append(self._pending.task)
            self._pending = None
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._idle_timer = None
