"""One chat session at run time: its stored record, in-context messages, engine and agent loop.

Everything here is rebuilt from the store on demand, so a session evicted from memory or a
restarted daemon carries on where it was (context, summary, cooldowns and all).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.engines.context_engine import ContextEngine
from agent.loop import (
    AgentLoop,
    LoopSettings,
    TurnResult,
    missing_tool_results,
    unanswered_tool_calls,
)
from agent.memory import MemoryOwner, merge_facts, with_memory
from agent.policy.scheduler import CompactionScheduler
from agent.policy.session_clock import SENT_AT_KEY, SessionClock
from agent.policy.session_policy import SessionPolicy
from agent.reply_stream import ReplyObserver
from agent.session_context import SessionContext
from agent.tools import ToolRegistry, build_registry
from agent.tools.approvals import ApprovalPort
from agent.tools.memory_tool import memory_tool
from agent.tools.recall_tool import recall_tool
from agent.tools.tool_output import ToolOutputs, result_limit
from agent.types import (
    CompactionResult,
    Message,
    MessageBookkeeping,
    UserContent,
    note_stored_ids,
)
from gateway.jobs.schedule_tool import JobOrigin, schedule_tool
from gateway.media.blobs import BlobStore, hydrate_context
from gateway.media.tool_images import ToolResultImages
from gateway.sessions.compaction_notice import compaction_notices
from gateway.sessions.engine_factory import build_engine
from gateway.sessions.model_choice import SessionModel
from gateway.sessions.recorder import StoreRecorder
from gateway.sessions.services import AgentServices, Billing
from gateway.store.records import InboundLink, SessionRecord

log = logging.getLogger(__name__)

STOPPED_NOTE = "(The user stopped this answer with /stop before it was given.)"


@dataclass(slots=True)
class SessionAddress:
    """Where a session lives: its key and the platform coordinates it was created from."""

    key: str
    platform: str
    chat_id: str
    user_id: str | None = None
    is_group: bool = False
    """Whether several people share the chat (its memory is then the chat's, not a user's)."""
    thread_id: str | None = None
    """The topic or thread within the chat, where it has one (a job's answers go there)."""
    username: str | None = None
    """The writing user's username, where the platform has one."""
    is_admin: bool = False
    """Whether the user writing is one of the platform's ``admin_users``."""

    @property
    def offers_admin_tools(self) -> bool:
        """Admin-only tools (``mcp.servers.*.users: admins``) are offered only in an admin's
        own chat: a group's tool list is shared by everyone in it."""
        return self.is_admin and not self.is_group

    @property
    def user_key(self) -> str | None:
        """``platform:user_id`` of the user writing (usage and budgets are theirs)."""
        return f"{self.platform}:{self.user_id}" if self.user_id else None

    @property
    def memory_owner(self) -> MemoryOwner | None:
        """Whose memory the session reads and writes: the group's, or the user's."""
        return MemoryOwner.for_chat(
            self.platform, self.chat_id, self.user_id, is_group=self.is_group
        )

    @property
    def job_origin(self) -> JobOrigin | None:
        """Where jobs scheduled in this session run and answer (None: no user to own them)."""
        if self.user_id is None:
            return None
        chat_type = "group" if self.is_group else "private"
        return JobOrigin(
            self.platform,
            self.user_id,
            self.chat_id,
            self.thread_id,
            chat_type,
            self.key,
            self.username,
        )


@dataclass(frozen=True, slots=True)
class TurnSource:
    """The inbound messages a turn's user text was merged from.

    ``stored_message_id`` is the user message a run interrupted by a crash already stored for
    them (None for a new turn).
    """

    link: InboundLink
    stored_message_id: int | None = None


@dataclass(slots=True)
class TurnReply:
    """What the user gets back from one turn."""

    text: str
    notices: list[str] = field(default_factory=list)
    result: TurnResult | None = None
    hygiene: CompactionResult | None = None
    policy: CompactionResult | None = None
    """The context policy's compaction applied before the turn (``cold_start``, ``idle``)."""


def _user_message(text: UserContent, source: TurnSource | None) -> Message:
    message: Message = {"role": "user", "content": text}
    link = _answered(source)
    if link is not None:
        bookkeeping: MessageBookkeeping = {"_platform_message_id": link.platform_message_ids[-1]}
        message.update(bookkeeping)
    return message


def _answered(source: TurnSource | None) -> InboundLink | None:
    """The inbound messages a new user message answers (None when it came from none)."""
    return source.link if source is not None and source.link.platform_message_ids else None


class SessionRuntime:
    """A loaded session: run turns, compact on demand, report usage and status."""

    def __init__(
        self,
        services: AgentServices,
        record: SessionRecord,
        context: list[Message],
        engine: ContextEngine,
        clock: SessionClock | None = None,
        user_times: Sequence[float] = (),
        model: SessionModel | None = None,
        billing: Billing | None = None,
        memory_owner: MemoryOwner | None = None,
        job_origin: JobOrigin | None = None,
        admin_tools: bool = False,
    ) -> None:
        self.services = services
        self.admin_tools = admin_tools
        """Whether the session offers admin-only tools (an admin's private chat)."""
        self.record = record
        self.billing = billing or Billing(record.id)
        """Whose calls this session's are: the session, and the user of the turn running."""
        self.model = model or services.models.get(record.model)
        """The session's model (``/model``): its provider, window, caching and prices."""
        self.context = context
        self.engine = engine
        self.clock = clock or SessionClock.measured_by(context, services.elapsed)
        """The session's time, from its messages' platform times (never the wall clock)."""
        self._saved_engine_state: dict[str, Any] = dict(record.engine_state or {})
        config = services.config
        self.policy = SessionPolicy(
            services.policy_settings, self.model.info, services.summary_model, user_times
        )
        recorder = StoreRecorder(
            services.repo,
            record.id,
            self.model.info,
            self.model.provider.name,
            self._cache_ttl,
            self.billing,
        )
        self.recorder = recorder
        self.job_origin = job_origin
        """Whose jobs the ``schedule`` tool adds, and in which chat: the user of the turn
        running (:meth:`note_turn_origin`; None: nobody, no tool)."""
        self.memory_owner = memory_owner if config.memory.enabled else None
        """Whose memory the session keeps (None: memory is off, or the chat has no owner)."""
        self._base_prompt = ""
        self._ask_again: list[dict[str, Any]] = []
        """Tool calls a crash left waiting for approval, asked again by the resumed turn."""
        """The session's stored system prompt, which the memory snapshot is added to."""
        tools = self._tools()
        self.session = SessionContext(
            context,
            engine,
            recorder,
            self.model.provider.open_session(),
            system_prompt=self._system_prompt if self.memory_owner else None,
            keep_facts=self._keep_facts if config.memory.flush_on_compaction else None,
            refresh_tools=tools.refresh,
        )
        """The context and every change of it (stored as it happens)."""
        if engine.get_tool_schemas():
            tools.add_engine_tools(engine.get_tool_schemas(), engine.handle_tool_call)
        self.compactions = CompactionScheduler(
            self.session,
            self.policy,
            self.clock,
            self._engine_copy,
            self.model.context_length,
            answer_tokens=config.model.max_tokens,
            compression_enabled=config.compression.enabled,
        )
        """Every compaction decision of the session (the loop asks it before each call)."""
        self.loop = AgentLoop(
            self.session,
            tools,
            LoopSettings(
                max_tokens=config.model.max_tokens,
                max_iterations=config.agent.max_iterations,
                cache_policy=self.model.cache_policy,
                cache_ttl=self._cache_ttl,
            ),
            gate=self.compactions,
            spans=self.services.spans,
        )

    @property
    def session_id(self) -> int:
        return self.record.id

    def _tools(self) -> ToolRegistry:
        """The configured built-ins, and the memory and recall tools when the session has a
        memory."""
        config = self.services.config
        limit = result_limit(config.agent.max_tool_result_tokens, self.model.context_length)
        outputs = ToolOutputs(self.services.repo, self.record.id, limit)
        tools = build_registry(
            config.agent.tools, web=config.web.tool_settings(), clip=outputs.clip
        )
        images = ToolResultImages(
            BlobStore(config.media.blob_path()), config.media, self._shows_tool_images
        )
        for provider in self.services.tool_providers:
            if self.admin_tools or not provider.connection.spec.admins_only:
                tools.add_provider(provider.for_session(images))
        if self.memory_owner is not None:
            limit = config.memory.max_chars_per_user
            tools.add(memory_tool(self.services.repo, self.memory_owner, limit))
            tools.add(recall_tool(self.services.repo, self.memory_owner, self.record.id))
        if self.services.jobs is not None and self.job_origin is not None:
            tools.add(schedule_tool(self.services.jobs, lambda: self.job_origin))
        if tools.names() or self.services.tool_providers:  # from the first request on
            tools.add(outputs.tool())
        return tools

    def _shows_tool_images(self) -> bool:
        """Whether tool results reach the model with their images: a model that sees images,
        on the Anthropic API (a chat-completions tool message takes text only)."""
        return self.model.info.vision and self.services.config.model.provider == "anthropic"

    def note_turn_origin(self, origin: JobOrigin | None) -> None:
        """The user of the turn about to run (a group session's turns are its members')."""
        if origin is not None:
            self.job_origin = origin

    async def _system_prompt(self) -> str:
        """The system prompt with a snapshot of the memory, as of now (for cold points)."""
        if self.memory_owner is None:
            return self._base_prompt
        entries = await self.services.repo.list_memories(self.memory_owner)
        return with_memory(self._base_prompt, entries)

    async def _keep_facts(self, facts: list[str]) -> None:
        """Merge a compaction's durable facts into the session owner's memory."""
        if self.memory_owner is None:
            return
        limit = self.services.config.memory.max_chars_per_user
        added = await merge_facts(self.services.repo, self.memory_owner, facts, limit)
        log.debug("session %s: %d fact(s) from a compaction kept", self.session_id, len(added))

    def _cache_ttl(self) -> str:
        """The tier of the session's requests now: fixed, or chosen from its message times."""
        return self.policy.ttl

    @classmethod
    async def open(
        cls, services: AgentServices, address: SessionAddress, *, fresh: bool = False
    ) -> SessionRuntime:
        """Load the active session for ``address`` (or start a new one with ``fresh``)."""
        repo = services.repo
        engine_name = services.config.context.engine
        make = repo.start_new_session if fresh else repo.get_or_create_session
        record = await make(
            address.key,
            platform=address.platform,
            chat_id=address.chat_id,
            user_id=address.user_id,
            engine=engine_name,
        )
        if record.engine != engine_name:
            await repo.update_session(record.id, engine=engine_name)
        context = await repo.load_context(record.id)
        hydrate_context(context, BlobStore(services.config.media.blob_path()))
        clock = SessionClock.measured_by(context, services.elapsed)
        model = services.models.get(record.model)
        billing = Billing(record.id, address.user_key)
        has_memory = services.config.memory.enabled and address.memory_owner is not None
        engine = build_engine(
            services, engine_name, clock, model.context_length, billing, has_memory=has_memory
        )
        await engine.on_session_start(
            record.id, engine.state_type.from_json(record.engine_state or {})
        )
        engine.restore_prompt_size(record.last_prompt_tokens)
        user_times = await repo.user_message_times(record.id)
        runtime = cls(
            services,
            record,
            context,
            engine,
            clock,
            user_times,
            model,
            billing,
            address.memory_owner,
            address.job_origin,
            address.offers_admin_tools,
        )
        await runtime._ensure_consistent()
        await runtime.session.refresh_system_prompt()  # a loaded session's cache is cold
        return runtime

    async def _ensure_consistent(self) -> None:
        recorder = self.recorder
        if not self.context:
            system = {"role": "system", "content": self.services.config.agent.system_prompt}
            note_stored_ids([system], await recorder.record_messages([system]))
            self.context.append(system)
        first = self.context[0]
        if first.get("role") == "system":
            self._base_prompt = str(first.get("content") or "")
        # Calls that waited for the user's approval when the run died: a resumed turn asks
        # again (the stubs below tell the model they never ran).
        self._ask_again = [
            call
            for call in unanswered_tool_calls(self.context)
            if self.loop.tools.needs_approval(str(call.get("function", {}).get("name", "")))
        ]
        stubs = missing_tool_results(self.context)
        if stubs:
            note_stored_ids(stubs, await recorder.record_messages(stubs))
            self.context.extend(stubs)

    async def run_turn(
        self,
        text: UserContent,
        *,
        source: TurnSource | None = None,
        sent_at: float | None = None,
        user_key: str | None = None,
        observer: ReplyObserver | None = None,
        approvals: ApprovalPort | None = None,
    ) -> TurnReply:
        """Store the user's message, run hygiene, then one agent turn.

        ``text`` is the message's content: a string, or content parts (attachments, text).
        The message is stored first, so nothing received is ever lost, and hygiene compacts
        with it in view (the previous turn is complete, so all of it may be summarised). With
        the ``source`` of a turn a crash interrupted after its message was stored, the turn
        resumes from the stored context instead of storing the text twice (and a stored
        answer that was never delivered is returned without calling the model).
        ``sent_at`` is the platform's time of the message (epoch seconds), stored with it and
        the session's clock from then on. ``user_key`` is whose turn it is (its calls and
        summaries are billed to them); ``observer`` watches the reply being written;
        ``approvals`` asks the user before a tool marked ``ask`` runs.
        """
        async with self.compactions.lock:
            self.billing.user_key = user_key
            return await self._run_turn(text, source, sent_at, observer, approvals)

    async def _run_turn(
        self,
        text: UserContent,
        source: TurnSource | None,
        sent_at: float | None,
        observer: ReplyObserver | None,
        approvals: ApprovalPort | None = None,
    ) -> TurnReply:
        reply = TurnReply(text="")
        last_call_at = self.clock.newest
        stored_at = self._stored_position(source)
        resumed = stored_at is not None
        now = sent_at if sent_at is not None else self.clock.now()
        gap_compacted = False if resumed else self.compactions.at_message(now)
        if stored_at is not None:
            last = self.context[-1]
            answered = stored_at < len(self.context) - 1
            if answered and last.get("role") == "assistant" and not last.get("tool_calls"):
                # Answered before the crash but never delivered: deliver the stored answer.
                reply.text = str(last.get("content") or "")
                return reply
            log.info("session %s: resuming an interrupted turn", self.session_id)
        else:
            message = _user_message(text, source)
            if sent_at is not None:
                message[SENT_AT_KEY] = sent_at
            stored_id = await self.recorder.record_user_message(message, _answered(source))
            note_stored_ids([message], [stored_id])
            self.session.add_stored([message])
            self.policy.note_message(sent_at)
        self.clock.observe(sent_at)
        waited = 0.0
        if not resumed:
            with self.services.spans.span("hygiene", {"hermes.hygiene.step": "policy"}):
                before = await self.compactions.before_turn(
                    last_call_at=last_call_at, now=now, gap_compacted=gap_compacted
                )
            reply.policy = before.applied
            waited += before.waited_seconds
            starts_visit = self._starts_visit(last_call_at, now)
            self.recorder.mark_visit_start(starts_visit)
            if starts_visit:  # the cache is cold: the memory's snapshot may change for free
                await self.session.refresh_system_prompt()
        started = time.perf_counter()
        with self.services.spans.span("hygiene", {"hermes.hygiene.step": "window"}):
            reply.hygiene = await self.compactions.before_turn_window()
        waited += time.perf_counter() - started
        ask_again, self._ask_again = (self._ask_again if resumed else []), []
        result = await self.loop.run_turn(
            None, observer=observer, approvals=approvals, ask_again=ask_again
        )
        result.wait_seconds += waited
        reply.result = result
        reply.text = result.reply
        notify = self.services.config.compression.notify
        reply.notices.extend(compaction_notices(self.session.take_compactions(), notify=notify))
        await self.save_engine_state()
        self.compactions.schedule_idle()
        return reply

    def _starts_visit(self, last_call_at: float | None, now: float) -> bool:
        """Whether this message opens a visit: its cache went cold since the last model call
        (by message times, on the tier that call used), or the session never called the model."""
        if last_call_at is None:
            return not any(m.get("role") == "assistant" for m in self.context)
        return self.policy.cache_is_cold(last_call_at, now)

    def _stored_position(self, source: TurnSource | None) -> int | None:
        """Where in the context the turn's user message already is (stored before a crash).

        Known by the row the inbound messages point at; for messages recorded before they
        did, by the platform id on the newest user message.
        """
        if source is None:
            return None
        if source.stored_message_id is not None:
            for index in range(len(self.context) - 1, -1, -1):
                if self.context[index].get("_id") == source.stored_message_id:
                    return index
            log.warning(
                "session %s: stored message %s of a resumed turn is no longer in context",
                self.session_id,
                source.stored_message_id,
            )
        for index in range(len(self.context) - 1, -1, -1):
            message = self.context[index]
            if message.get("role") == "user" and message.get("_kind") is None:
                stored_id = message.get("_platform_message_id")
                return index if stored_id in source.link.platform_message_ids else None
        return None

    async def compress(self, focus: str | None) -> CompactionResult:
        """Manual compaction (``/compress [focus]``)."""
        async with self.compactions.lock:
            result = await self.compactions.compact_now("manual", focus or None)
            await self.save_engine_state()
            return result

    def _engine_copy(self) -> ContextEngine:
        """A fresh engine in this one's state, for a compaction beside the turns."""
        copy = build_engine(
            self.services,
            self.services.config.context.engine,
            self.clock,
            self.model.context_length,
            self.billing,
            has_memory=self.memory_owner is not None,
        )
        copy.load_state(self.engine.get_state())
        copy.restore_prompt_size(self.engine.current_prompt_tokens)
        return copy

    async def save_engine_state(self) -> None:
        """Persist the engine's state (summary, cooldowns) with the session, when it changed."""
        state = self.engine.get_state().to_json()
        if state != self._saved_engine_state:
            await self.services.repo.update_session(self.session_id, engine_state=state)
            self._saved_engine_state = state

    async def reload(self) -> None:
        """Re-read the context from the store (after ``/stop`` cancelled a turn midway)."""
        snapshot = self.context[0] if self.context else None
        self.context[:] = await self.services.repo.load_context(self.session_id)
        hydrate_context(self.context, BlobStore(self.services.config.media.blob_path()))
        self.session.provider_session.reset()
        await self._ensure_consistent()
        if (
            snapshot is not None
            and self.context
            and snapshot.get("_id") == self.context[0].get("_id")
        ):
            self.context[0] = snapshot  # mid-visit: keep the memory snapshot the cache holds

    async def after_stop(self) -> None:
        """After a turn was cancelled (``/stop``, Ctrl-C in the terminal): the context read
        again from the store, and the unanswered message marked (:meth:`mark_stopped`)."""
        await self.reload()
        await self.mark_stopped()

    async def mark_stopped(self) -> None:
        """After ``/stop``: a user message left without an answer gets a short assistant note,
        so the next turn does not merge it with the new message and the model knows why."""
        if self.context and self.context[-1].get("role") == "user":
            note: Message = {"role": "assistant", "content": STOPPED_NOTE}
            note_stored_ids([note], await self.recorder.record_messages([note]))
            self.context.append(note)

    async def close(self) -> None:
        await self.compactions.close()
        await self.engine.on_session_end(self.session_id)
