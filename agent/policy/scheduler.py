"""Every compaction decision of a session, in one place: when to compact, and how.

The scheduler is the one owner of "compact now?": before a turn (the context policy's
``cold_start`` and ``idle``, then hygiene at 85% of the window and the engine's threshold), before
each model call of a turn (the agent loop asks :meth:`CompactionScheduler.compact_before_call`),
and on request (``/compress``: :meth:`CompactionScheduler.compact_now`). It changes the context
only through the session's :class:`~agent.session_context.SessionContext`, never through the
loop.

Policy compactions beside a session's turns: started when they pay, applied when it is safe.

A compaction by the context policy (``cold_start`` at a message after the cache expired,
``idle`` in the background once it expired) runs on a copy of the session's engine over a
snapshot of its context, so a turn can go on meanwhile. A message waits for it at most
``max_wait_seconds``; after that its turn runs on the context it has (which fits the window)
and the compaction is applied after the turn, only if the snapshot is still the start of the
context and it still pays, else dropped. The session's turns hold :attr:`lock`; so does
applying a compaction, so the context never changes under a running turn.

Idle, and how it relates to the session clock. After each turn the gap's *idle point* is fixed
by message times: the newest message's platform time plus the cache TTL and margins. A timer
sleeps on the session clock (newest platform time + elapsed time) until a little past it, then
makes the idle decision *as of the idle point*: the context as the last turn left it, the prompt
size then, the visit history before the idle point; the clock's reading plays no part. When a
message comes first with a platform time past the idle point (a replay faster than real time,
a restart, a session reloaded from the store), it makes the same decision before it joins the
context, and waits for the result as for any policy compaction. Live or replayed, a transcript
with the same timestamps gets the same idle compactions (count, trigger, range), as long as each
summary is ready within the wait; a slower one is applied after the turn if still valid, which
can differ from a live run where it was ready before the message came.

Threshold compactions (``agent`` at the engine's threshold, ``hygiene`` at 85%) run the same way
when the engine can compact beside the turns and the prompt still fits the window: no turn waits
for a summary (beyond the same short wait) while its context fits. They are applied after the
turn whenever still valid (the window needs them; there is no cost test), the extractive
fallback included, whose notice goes out with the next reply. Only a prompt that would not fit
compacts before the turn and holds it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from agent.engines.context_engine import ContextEngine
from agent.policy.context_policy import COLD_MARGIN_SECONDS, PRUNE_TURNS, requests_per_turn
from agent.policy.hygiene import needs_hygiene
from agent.policy.jobs import (
    BeforeTurn,
    IdlePoint,
    PendingCompaction,
    SchedulerLog,
    StepDecision,
)
from agent.policy.session_clock import SessionClock
from agent.policy.session_policy import PolicyCall, SessionPolicy
from agent.policy.turn_steps import TurnSteps
from agent.session_context import SessionContext, first_change
from agent.tokens import cache_message_tokens, estimate_messages_tokens_rough
from agent.types import CompactionResult, CompactionTrigger, Message

log = logging.getLogger(__name__)

IDLE_SLACK_SECONDS = 1.0
"""The idle point lies this long after the cache counts as cold, so it surely does."""
IDLE_LATE_MESSAGE_SECONDS = 30.0
"""The idle timer wakes this much (elapsed) time after the idle point: a message sent before
the idle point but delivered late still arrives first, and the session is not idle."""

EngineCopy = Callable[[], ContextEngine]
"""Builds a fresh engine in the session engine's current state (for a background compaction)."""


THRESHOLD_PRUNE_MIN_SHARE = 0.1
"""At the threshold, clearing used outputs stands in for a compaction only when it takes at
least this share of the prompt away (a prompt the API counts larger than the local estimate
must not be cleared a little at every call, each time rewriting the cache)."""

THRESHOLD_TRIGGERS: frozenset[CompactionTrigger] = frozenset({"agent", "hygiene"})

"""Compactions the window asks for, which may run beside the turns while the prompt fits."""


class CompactionScheduler:
    """Starts, waits for and applies one session's policy compactions."""

    def __init__(
        self,
        session: SessionContext,
        policy: SessionPolicy,
        clock: SessionClock,
        engine_copy: EngineCopy,
        context_length: int,
        *,
        answer_tokens: int,
        compression_enabled: bool = True,
    ) -> None:
        self.session = session
        self.context_length = context_length
        self.answer_tokens = answer_tokens
        """Room kept for the answer when judging whether the prompt fits (``max_tokens``)."""
        self.compression_enabled = compression_enabled
        """``compression.enabled``: hygiene compacts only when compaction is on."""
        self.policy = policy
        self.clock = clock
        self._engine_copy = engine_copy
        self.lock = asyncio.Lock()
        """Held by every turn and by every change of the context from here."""
        self.log = SchedulerLog()
        self._pending: PendingCompaction | None = None
        self._idle: IdlePoint | None = None
        self._idle_timer: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.steps = TurnSteps()
        """The session's requests per turn (how long its turns run), read from its context."""
        self._sent: int | None = None
        """Messages the previous model request carried (what the cache holds now); None when
        unknown (before the first request, after a compaction)."""
        self._waste_tokens = 0
        """Clearable used-output tokens the turn's requests read since its last clearing."""

    @property
    def pending(self) -> PendingCompaction | None:
        """The policy compaction in flight, if any."""
        return self._pending

    # -- at a message ----------------------------------------------------------------------
    def at_message(self, now: float) -> bool:
        """A message with platform time ``now`` arrived (the caller holds :attr:`lock`; the
        message is not in the context yet). Ends the idle wait; returns whether the gap it
        ends already has its policy compaction (started idle), so none is started for it.

        A message past the idle point that finds no idle decision made (a replay faster than
        real time, a restart, a session reloaded from the store) makes it now, on the same
        inputs the timer would have used: the context before the message and the idle point's
        time. A message from before the idle point drops an idle compaction the timer started
        early (its platform time lagged the elapsed time): by message times it was never idle.
        """
        self._cancel_idle_timer()
        point, self._idle = self._idle, None
        if point is None:
            return False
        if now < point.at:
            if point.started:
                self._drop_pending("idle", "a message from before the idle point")
            return False
        if not point.decided:
            self._decide_idle(point)
        return point.started

    async def before_turn(
        self, *, last_call_at: float | None, now: float, gap_compacted: bool = False
    ) -> BeforeTurn:
        """At a new message (the caller holds :attr:`lock`; the message is in the context).

        A compaction already in flight (idle) is waited for; otherwise, after a gap past the
        TTL that has no compaction yet (``gap_compacted``), one is started when it pays.
        Either is applied now if it finishes within the wait, else after the turn (if still
        valid).
        """
        self._cancel_idle_timer()
        pending = self._pending
        if pending is None:
            if gap_compacted:
                return BeforeTurn()
            call = self.policy.decide(
                self.session.engine,
                self.session.messages,
                trigger="cold_start",
                prompt_tokens=self.session.prompt_tokens,
                last_call_at=last_call_at,
                now=now,
                requests_per_turn=self._requests_per_turn(),
            )
            if call is not None:
                log.info("context policy, cold start: %s", call.decision.reason)
            if call is None or not call.decision.pays:
                cold = self.policy.cache_is_cold(last_call_at, now)
                return BeforeTurn(await self._prune_used(cold=cold))
            pending = self._start(call.trigger, call)
        if pending.visit_start is None:
            pending.visit_start = now
        return await self.wait_pending()

    async def _prune_used(self, *, cold: bool) -> CompactionResult | None:
        """At a new message: clear the tool outputs of earlier turns when that pays (no model
        call, so it is applied at once); returns what was applied."""
        result = self._paying_prune(cold=cold)
        if result is None:
            return None
        await self.session.apply(result, refresh_prefix=cold)
        return result

    def _paying_prune(self, *, cold: bool, at_threshold: bool = False) -> CompactionResult | None:
        """The engine's clearing of used tool outputs, if it pays now (else None).

        ``at_threshold``: the engine's threshold is reached, so the alternative is a
        compaction that rewrites everything after the head anyway and pays a summary: clearing
        pays whenever it alone brings the prompt back under the threshold, or when it makes the
        prompt fit the window again so that the summary need not hold the turn up.
        """
        if not self.policy.settings.prune_consumed:
            return None
        if self._pending is not None and not at_threshold:
            return None  # the compaction in flight may make it moot
        # At the threshold a compaction in flight does not stop it: the alternative may be a
        # summary the turn waits for; the one in flight is then dropped (its snapshot changed).
        messages = self.session.messages
        result = self.session.engine.prune_used(messages)
        if result is None:
            return None
        rewritten = _rewritten_tokens(result.messages, messages)
        if at_threshold:
            saves = result.tokens_before - result.tokens_after
            under = not self.session.engine.should_compress(result.tokens_after)
            # Or it makes room for the summary to run beside the turn instead of before it.
            room = not self._fits_window() and (
                result.tokens_after + self.answer_tokens <= self.context_length
            )
            fits = saves >= THRESHOLD_PRUNE_MIN_SHARE * result.tokens_before and (under or room)
            log.debug("threshold: clearing used tool outputs %s", "does" if fits else "does not")
            return result if fits else None
        saved = result.tokens_before - result.tokens_after
        per_turn = max(requests_per_turn(messages), self._requests_per_turn())
        decision = self.policy.prune_decision(
            saved, rewritten, cold=cold, expected_requests=PRUNE_TURNS * per_turn
        )
        log.debug("context policy, used tool outputs: %s", decision.reason)
        return result if decision.pays else None

    def _step_clearing(self) -> CompactionResult | None:
        """Inside a turn, below the threshold: the engine's clearing of used outputs when it
        pays now (:func:`~agent.policy.context_policy.should_clear_in_turn`) for the requests
        the turn is still expected to make (the session's own history of requests per turn
        says how many), else None. Each later request reads the cleared tokens no more; the
        next one writes again what the cache held from the first cleared output on.
        """
        if not self.policy.settings.prune_consumed or self._pending is not None:
            return None
        done = self.steps.current
        if done == 0:
            self._waste_tokens = 0
            return None  # the turn's first request: the clearing at its message was weighed
        messages = self.session.messages
        result = self.session.engine.prune_used(messages)
        if result is None:
            return None
        saved = result.tokens_before - result.tokens_after
        self._waste_tokens += saved  # this request reads them too, unless they go now
        rewritten = _rewritten_tokens(result.messages, messages, cached=self._sent)
        remaining = self.steps.remaining()
        decision = self.policy.step_clearing_decision(
            saved, rewritten, self._waste_tokens, remaining
        )
        self.log.note_step(StepDecision(done, remaining, saved, rewritten, decision))
        log.debug("context policy, inside the turn (request %d): %s", done + 1, decision.reason)
        if not decision.pays:
            return None
        self._waste_tokens = 0
        return dataclasses.replace(
            result, estimated_saving_usd=decision.saving_usd, estimated_cost_usd=decision.cost_usd
        )

    def _requests_per_turn(self) -> float:
        """The session's mean requests per turn, from its context as it is now."""
        self.steps.observe(self.session.messages)
        return self.steps.per_turn()

    @property
    def context(self) -> list[Message]:
        """The session's messages (the context compactions replace)."""
        return self.session.messages

    # -- at the window's thresholds ----------------------------------------------------------
    def window_trigger(self) -> CompactionTrigger | None:
        """The threshold the context is at before a turn: ``hygiene`` at 85% of the window,
        else ``agent`` at the engine's threshold, else None."""
        engine = self.session.engine
        if needs_hygiene(
            self.session.messages,
            last_prompt_tokens=engine.last_prompt_tokens,
            context_length=self.context_length,
            compression_enabled=self.compression_enabled,
        ):
            return "hygiene"
        if engine.should_compress(self.session.prompt_tokens):
            return "agent"
        return None

    async def before_turn_window(self) -> CompactionResult | None:
        """Before a turn, after the policy's decision: hygiene or the engine's threshold.
        Compacted before the turn only when the prompt would not fit the window, else beside
        the turn (waited for briefly, like a policy compaction). Returns what was applied."""
        trigger = self.window_trigger()
        if trigger is None:
            return None
        if trigger == "agent" and self._paying_prune(cold=False, at_threshold=True) is not None:
            return await self.session.compact("prune")  # no summary needed yet
        in_flight = self._pending is not None  # waited for already, if at all
        if self.defer_for_window(trigger):
            return None if in_flight else (await self.wait_pending()).applied
        if trigger == "agent":
            return None  # compacted before the turn's first model call (compact_before_call)
        log.info("hygiene compaction before the turn")
        return await self.session.compact("hygiene")

    async def before_call(self) -> CompactionTrigger | None:
        """Asked by the agent loop before each model call: a policy compaction that finished
        while the turn ran is applied first, if it still pays for the requests left (a long
        tool loop need not wait for its end); below the threshold, used tool outputs are
        cleared when that pays now (applied here, with its estimate); then
        :meth:`compact_before_call` for the window's threshold."""
        pending = self._pending
        if pending is not None and pending.task.done():
            await self._finish(pending)
        self.steps.observe(self.session.messages)
        if not self.session.engine.should_compress(self.session.prompt_tokens):
            cleared = self._step_clearing()
            if cleared is not None:
                await self.session.apply(cleared, refresh_prefix=False)
        trigger = self.compact_before_call()
        # The request about to go out carries the whole context (a summary changes its length:
        # what it replaced is not cached, so nothing of it counts as rewritten).
        self._sent = len(self.session.messages) if trigger in (None, "prune") else None
        return trigger

    def compact_before_call(self) -> CompactionTrigger | None:
        """Before each model call of a turn, at the engine's threshold: ``prune`` when clearing
        the tool outputs the model has used makes room (no summary needed yet), ``agent`` when
        a compaction cannot run beside the turn (the prompt would not fit the window), else
        None (nothing due, or started beside the turn)."""
        if not self.session.engine.should_compress(self.session.prompt_tokens):
            return None
        if self._paying_prune(cold=False, at_threshold=True) is not None:
            return "prune"  # no model call: cleared now, the cached prefix before it kept
        return None if self.defer_for_window("agent") else "agent"

    async def compact_now(
        self, trigger: CompactionTrigger, focus_topic: str | None = None
    ) -> CompactionResult:
        """A compaction asked for outright (``/compress``): run now (the caller holds
        :attr:`lock`)."""
        return await self.session.compact(trigger, focus_topic)

    def defer_for_window(self, trigger: CompactionTrigger) -> bool:
        """A threshold compaction (``agent``, ``hygiene``) is due: whether it may run beside
        the turn instead of before it (the caller holds :attr:`lock`). True when the engine can
        compact on a copy and the prompt still fits the window with room for the answer; the
        compaction is then started, unless one is in flight already. False: compact now.
        """
        if not (
            self.policy.settings.threshold_in_background
            and self.session.engine.compacts_in_background
            and self._fits_window()
        ):
            return False
        if self._pending is None:
            log.info("%s threshold reached: compacting beside the turns", trigger)
            self._start(trigger, None)
        return True

    def _fits_window(self) -> bool:
        prompt = self.session.prompt_tokens
        if prompt is None:
            prompt = estimate_messages_tokens_rough(self.session.messages)
        return prompt + self.answer_tokens <= self.context_length

    async def wait_pending(self) -> BeforeTurn:
        """Wait (at most ``max_wait_seconds``) for the compaction in flight and apply it if it
        finished; else the turn runs without it (the caller holds :attr:`lock`)."""
        pending = self._pending
        if pending is None:
            return BeforeTurn()
        started = time.perf_counter()
        if not pending.task.done():
            await asyncio.wait({pending.task}, timeout=self.policy.settings.max_wait_seconds)
        waited = time.perf_counter() - started
        if not pending.task.done():
            log.info("context policy: the summary is not ready; the turn runs without it")
            return BeforeTurn(waited_seconds=waited)
        return BeforeTurn(await self._finish(pending), waited)

    # -- when idle ---------------------------------------------------------------------------
    @property
    def idle_point(self) -> IdlePoint | None:
        """The idle point of the current gap (None: idle off, or no message time yet)."""
        return self._idle

    def schedule_idle(self) -> None:
        """After a turn: fix the gap's idle point and wake up there (``idle`` compaction)."""
        self._cancel_idle_timer()
        self._idle = None
        newest = self.clock.newest
        if not self.policy.settings.enabled_for("idle") or newest is None:
            return
        at = newest + self.policy.ttl_seconds + COLD_MARGIN_SECONDS + IDLE_SLACK_SECONDS
        self._idle = IdlePoint(at=at, last_call_at=newest)
        self._idle_timer = asyncio.create_task(self._wake_at(self._idle))

    async def _wake_at(self, point: IdlePoint) -> None:
        await self.clock.sleep_until(point.at + IDLE_LATE_MESSAGE_SECONDS)
        async with self.lock:
            if self._idle is point and not point.decided:
                self._decide_idle(point)

    def _decide_idle(self, point: IdlePoint) -> PendingCompaction | None:
        """The idle decision, at the idle point's time (the caller holds :attr:`lock`)."""
        point.decided = True
        if self._pending is not None:
            return None
        call = self.policy.decide(
            self.session.engine,
            self.session.messages,
            trigger="idle",
            prompt_tokens=self.session.prompt_tokens,
            last_call_at=point.last_call_at,
            now=point.at,
            requests_per_turn=self._requests_per_turn(),
        )
        if call is None:
            return None
        log.info("context policy, idle: %s", call.decision.reason)
        if not call.decision.pays:
            return None
        point.started = True
        return self._start(call.trigger, call)

    def _drop_pending(self, trigger: CompactionTrigger, reason: str) -> None:
        pending = self._pending
        if pending is None or pending.trigger != trigger:
            return
        self._pending = None
        pending.task.cancel()
        log.info("context policy: %s compaction dropped (%s)", trigger, reason)
        self.log.dropped.append(reason)

    # -- running and applying ---------------------------------------------------------------
    def _start(self, trigger: CompactionTrigger, call: PolicyCall | None) -> PendingCompaction:
        engine = self._engine_copy()
        snapshot = list(self.session.messages)
        task = asyncio.create_task(engine.compact(list(snapshot), trigger))
        pending = PendingCompaction(trigger, call, snapshot, engine, task)
        self._pending = pending
        self.log.started.append(trigger)
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
            log.info("context policy: %s compaction dropped (%s)", pending.trigger, reason)
            self.log.dropped.append(reason)
            return None
        result = pending.task.result()
        if pending.call is not None:
            decision = pending.call.decision
            result = dataclasses.replace(
                result,
                estimated_saving_usd=decision.saving_usd,
                estimated_cost_usd=decision.cost_usd,
            )
        extra = self.session.messages[len(pending.snapshot) :]
        if extra:
            result = dataclasses.replace(
                result,
                messages=[*result.messages, *extra],
                tokens_after=result.tokens_after + sum(cache_message_tokens(m) for m in extra),
            )
        await self.session.apply(result)
        self.session.engine.load_state(pending.engine.get_state())
        self.log.applied.append(result.trigger)
        return result

    def _reject_reason(self, pending: PendingCompaction) -> str | None:
        task = pending.task
        if task.cancelled():
            return "cancelled"
        if task.exception() is not None:
            return f"failed: {task.exception()!r}"
        result = task.result()
        # A threshold compaction is applied as it would have been before the turn: even when
        # it could not shrink the context (the engine then keeps its loop guard).
        threshold = pending.trigger in THRESHOLD_TRIGGERS
        if result.outcome == "skipped" and not threshold:
            return "not smaller"
        if result.degraded and not threshold:
            # Optional compactions never settle for the extractive fallback.
            return f"no summary model ({result.detail})"
        if not pending.is_prefix_of(self.session.messages):
            return "the context changed meanwhile"
        extra = self.session.messages[len(pending.snapshot) :]
        requests_done = sum(1 for m in extra if m.get("role") == "assistant")
        if requests_done and not threshold:
            prompt = self.session.prompt_tokens or 0
            compacted = result.tokens_after + sum(cache_message_tokens(m) for m in extra)
            visit_start = pending.visit_start if pending.visit_start is not None else 0.0
            per_turn = self._requests_per_turn()
            if not self.policy.late_compaction_pays(
                prompt, compacted, requests_done, visit_start, requests_per_turn=per_turn
            ):
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


def _rewritten_tokens(
    cleared: Sequence[Message], messages: Sequence[Message], cached: int | None = None
) -> int:
    """Tokens written to the cache again after a clearing: what it held from the first
    message the clearing changed on (the prefix before it stays cached). ``cached``: how many
    messages the cache holds (the previous request's); those after it are written anyway.
    None: all of them."""
    first = first_change(messages, cleared)
    end = len(cleared) if cached is None else min(cached, len(cleared))
    return sum(cache_message_tokens(m) for m in cleared[first:end])
