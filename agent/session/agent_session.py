"""One chat session's agent: its engine, compaction scheduler, tool view and loop, one turn a call.

The host (the gateway, ``hermes chat``) builds an :class:`AgentSession` once per loaded session
from the ports it provides (:mod:`agent.session.ports`) and calls :meth:`AgentSession.run_turn`
once per turn. Which compaction runs when, the loop's model and tool calls and what is recorded
are decided here; the host never reaches into the scheduler, the loop or the compressor.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from agent.engines.context_engine import ContextEngine
from agent.loop import AgentLoop, LoopSettings
from agent.policy.jobs import IdlePoint
from agent.policy.scheduler import CompactionScheduler
from agent.policy.session_clock import SENT_AT_KEY, SessionClock
from agent.policy.session_policy import SessionPolicy
from agent.reply_stream import ReplyObserver
from agent.session.ports import (
    SessionModel,
    SessionPorts,
    SessionSettings,
    SessionStatus,
    TurnOutcome,
    TurnSource,
)
from agent.session.resume import (
    STOPPED_NOTE,
    answered,
    make_whole,
    stored_position,
    undelivered_answer,
    user_message,
)
from agent.session_context import SessionContext
from agent.tools import ToolRegistry
from agent.tools.approvals import ApprovalPort
from agent.types import CompactionResult, Message, UserContent, note_stored_ids

log = logging.getLogger(__name__)


class AgentSession:
    """A loaded session's agent: run turns, compact on demand, report status, close."""

    def __init__(
        self,
        session_id: int,
        context: list[Message],
        engine: ContextEngine,
        tools: ToolRegistry,
        ports: SessionPorts,
        settings: SessionSettings,
        model: SessionModel,
        clock: SessionClock,
        user_times: Sequence[float] = (),
    ) -> None:
        self.session_id = session_id
        self.context = context
        """The in-context messages, changed in place (system prompt first)."""
        self.engine = engine
        self.ports = ports
        self.settings = settings
        self.clock = clock
        """The session's time, from its messages' platform times (never the wall clock)."""
        self._saved_engine_state: dict[str, Any] = {}
        self._base_prompt = ""
        """The session's stored system prompt, which the memory snapshot is added to."""
        self._ask_again: list[dict[str, Any]] = []
        """Tool calls a crash left waiting for approval, asked again by the resumed turn."""
        self.policy = SessionPolicy(settings.policy, model.info, settings.summary_model, user_times)
        prompt = ports.system_prompt
        self.session = SessionContext(
            context,
            engine,
            ports.recorder,
            model.provider.open_session(),
            system_prompt=(lambda: prompt(self._base_prompt)) if prompt is not None else None,
            keep_facts=ports.keep_facts,
            refresh_tools=tools.refresh,
        )
        if engine.get_tool_schemas():
            tools.add_engine_tools(engine.get_tool_schemas(), engine.handle_tool_call)
        self.compactions = CompactionScheduler(
            self.session,
            self.policy,
            clock,
            self._engine_copy,
            model.context_length,
            answer_tokens=settings.max_tokens,
            compression_enabled=settings.compression_enabled,
        )
        """Every compaction decision of the session (tests wait on it: ``settled()``)."""
        self.loop = AgentLoop(
            self.session,
            tools,
            LoopSettings(
                max_tokens=settings.max_tokens,
                max_iterations=settings.max_iterations,
                context_length=model.context_length,
                cache_policy=model.cache_policy,
                cache_ttl=self.cache_ttl,
            ),
            gate=self.compactions,
            spans=ports.spans,
        )

    async def open(self, engine_state: dict[str, Any]) -> None:
        """Make a loaded context whole (a new session's system prompt, stubs for tool calls a
        crash left unanswered) and take the memory's snapshot; ``engine_state`` is the state
        the host started the engine in (saved again only once it changes)."""
        self._saved_engine_state = dict(engine_state)
        await self._ensure_consistent()
        await self.session.refresh_system_prompt()  # a loaded session's cache is cold

    async def _ensure_consistent(self) -> None:
        self._ask_again = await make_whole(
            self.context,
            self.ports.recorder,
            self.settings.system_prompt,
            self.loop.tools.needs_approval,
        )
        first = self.context[0]
        if first.get("role") == "system":
            self._base_prompt = str(first.get("content") or "")

    def cache_ttl(self) -> str:
        """The tier of the session's requests now: fixed, or chosen from its message times."""
        return self.policy.ttl

    async def run_turn(
        self,
        text: UserContent,
        *,
        source: TurnSource | None = None,
        sent_at: float | None = None,
        user_key: str | None = None,
        observer: ReplyObserver | None = None,
        approvals: ApprovalPort | None = None,
    ) -> TurnOutcome:
        """Store the user's message, compact where the policy or the window says, then run
        the agent loop; returns what to deliver.

        ``text`` is the message's content: a string, or content parts (attachments, text).
        The message is stored first, so nothing received is ever lost, and hygiene compacts
        with it in view. With the ``source`` of a turn a crash interrupted after its message
        was stored, the turn resumes from the stored context instead of storing the text
        twice (and a stored answer never delivered is returned without calling the model).
        ``sent_at`` is the platform's time of the message (epoch seconds), the session's
        clock from then on. ``user_key`` is whose turn it is (billed to them); ``observer``
        watches the reply being written; ``approvals`` asks before a tool marked ``ask``.
        """
        async with self.compactions.lock:
            self.ports.bill_to(user_key)
            return await self._run_turn(text, source, sent_at, observer, approvals)

    async def _run_turn(
        self,
        text: UserContent,
        source: TurnSource | None,
        sent_at: float | None,
        observer: ReplyObserver | None,
        approvals: ApprovalPort | None,
    ) -> TurnOutcome:
        outcome = TurnOutcome(text="")
        last_call_at = self.clock.newest
        stored_at = stored_position(self.context, source, self.session_id)
        resumed = stored_at is not None
        now = sent_at if sent_at is not None else self.clock.now()
        gap_compacted = False if resumed else self.compactions.at_message(now)
        if stored_at is not None:
            stored_answer = undelivered_answer(self.context, stored_at)
            if stored_answer is not None:  # answered before the crash, never delivered
                outcome.text = stored_answer
                return outcome
            log.info("session %s: resuming an interrupted turn", self.session_id)
        else:
            await self._store_user_message(text, source, sent_at)
        self.clock.observe(sent_at)
        waited = 0.0
        if not resumed:
            waited += await self._before_turn(outcome, last_call_at, now, gap_compacted)
        started = time.perf_counter()
        with self.ports.spans.span("hygiene", {"hermes.hygiene.step": "window"}):
            outcome.hygiene = await self.compactions.before_turn_window()
        waited += time.perf_counter() - started
        ask_again, self._ask_again = (self._ask_again if resumed else []), []
        result = await self.loop.run_turn(
            None, observer=observer, approvals=approvals, ask_again=ask_again
        )
        result.wait_seconds += waited
        outcome.result = result
        outcome.text = result.reply
        outcome.compactions = self.session.take_compactions()
        await self.save_engine_state()
        self.compactions.schedule_idle()
        return outcome

    async def _store_user_message(
        self, text: UserContent, source: TurnSource | None, sent_at: float | None
    ) -> None:
        message = user_message(text, source)
        if sent_at is not None:
            message[SENT_AT_KEY] = sent_at
        stored_id = await self.ports.recorder.record_user_message(message, answered(source))
        note_stored_ids([message], [stored_id])
        self.session.add_stored([message])
        self.policy.note_message(sent_at)

    async def _before_turn(
        self, outcome: TurnOutcome, last_call_at: float | None, now: float, gap_compacted: bool
    ) -> float:
        """The context policy's compaction before a new turn, and the memory snapshot taken
        again where the cache is cold; returns the seconds waited on a compaction."""
        with self.ports.spans.span("hygiene", {"hermes.hygiene.step": "policy"}):
            before = await self.compactions.before_turn(
                last_call_at=last_call_at, now=now, gap_compacted=gap_compacted
            )
        outcome.policy = before.applied
        starts_visit = self._starts_visit(last_call_at, now)
        self.ports.recorder.mark_visit_start(starts_visit)
        if starts_visit:  # the cache is cold: the memory's snapshot may change for free
            await self.session.refresh_system_prompt()
        return before.waited_seconds

    def _starts_visit(self, last_call_at: float | None, now: float) -> bool:
        """Whether this message opens a visit: its cache went cold since the last model call
        (by message times, on the tier that call used), or the session never called the model."""
        if last_call_at is None:
            return not any(m.get("role") == "assistant" for m in self.context)
        return self.policy.cache_is_cold(last_call_at, now)

    async def compress(self, focus: str | None) -> CompactionResult:
        """Manual compaction (``/compress [focus]``)."""
        async with self.compactions.lock:
            result = await self.compactions.compact_now("manual", focus or None)
            await self.save_engine_state()
            return result

    def _engine_copy(self) -> ContextEngine:
        """A fresh engine in this one's state, for a compaction beside the turns."""
        copy = self.ports.make_engine()
        copy.load_state(self.engine.get_state())
        copy.restore_prompt_size(self.engine.current_prompt_tokens)
        return copy

    async def save_engine_state(self) -> None:
        """Persist the engine's state (summary, cooldowns) with the session, when it changed."""
        state = self.engine.get_state().to_json()
        if state != self._saved_engine_state:
            await self.ports.save_state(state)
            self._saved_engine_state = state

    @property
    def idle_point(self) -> IdlePoint | None:
        """When the session's idle compaction is due, if one is (``/usage``, tests)."""
        return self.compactions.idle_point

    def status(self) -> SessionStatus:
        """The agent's side of ``/status``."""
        return SessionStatus(
            in_context=len(self.context),
            prompt_tokens=self.engine.last_prompt_tokens,
            engine_status=self.engine.get_status(),
            cache_ttl=self.policy.ttl,
        )

    def tool_names(self) -> list[str]:
        """The tools the model is offered now, in order (``/tools``)."""
        return self.loop.tools.names()

    async def after_stop(self) -> None:
        """After a turn was cancelled (``/stop``, Ctrl-C in the terminal): the context read
        again from the store, and an unanswered user message given a short assistant note,
        so the next turn does not merge it with the new message and the model knows why."""
        snapshot = self.context[0] if self.context else None
        self.context[:] = await self.ports.load_context()
        self.session.provider_session.reset()
        await self._ensure_consistent()
        if (
            snapshot is not None
            and self.context
            and snapshot.get("_id") == self.context[0].get("_id")
        ):
            self.context[0] = snapshot  # mid-visit: keep the memory snapshot the cache holds
        if self.context and self.context[-1].get("role") == "user":
            note: Message = {"role": "assistant", "content": STOPPED_NOTE}
            note_stored_ids([note], await self.ports.recorder.record_messages([note]))
            self.context.append(note)

    async def close(self) -> None:
        """Stop the session's background compactions and end the engine's session."""
        await self.compactions.close()
        await self.engine.on_session_end(self.session_id)
