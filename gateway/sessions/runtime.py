"""One chat session as the host holds it: its stored record, model, billing and its agent.

:meth:`SessionRuntime.open` builds the session's :class:`~agent.session.AgentSession` from the
store and the configuration (the engine, the tools, the recorder, the memory) and hands it the
ports it runs on; a turn is then one call into it. Everything here is rebuilt from the store on
demand, so a session evicted from memory or a restarted daemon carries on where it was
(context, summary, cooldowns and all).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.engines.context_engine import ContextEngine
from agent.memory import MemoryOwner, merge_facts, with_memory
from agent.reply_stream import ReplyObserver
from agent.session import (
    AgentSession,
    SessionClock,
    SessionPorts,
    TurnOutcome,
    TurnResult,
    TurnSource,
)
from agent.tools import ToolRegistry, build_registry
from agent.tools.approvals import ApprovalPort
from agent.tools.memory_tool import memory_tool
from agent.tools.recall_tool import recall_tool
from agent.tools.tool_output import ToolOutputs, result_limit
from agent.types import CompactionResult, Message, UserContent
from gateway.jobs.schedule_tool import JobOrigin, schedule_tool
from gateway.media.blobs import BlobStore, hydrate_context
from gateway.media.tool_images import ToolResultImages
from gateway.sessions.address import SessionAddress as SessionAddress  # re-exported
from gateway.sessions.compaction_notice import compaction_notices
from gateway.sessions.engine_factory import build_engine
from gateway.sessions.model_choice import SessionModel
from gateway.sessions.recorder import StoreRecorder
from gateway.sessions.services import AgentServices, Billing
from gateway.store.ports import SessionHostStore
from gateway.store.records import SessionRecord

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TurnReply:
    """What the user gets back from one turn: the agent's outcome and the chat's notices."""

    text: str
    notices: list[str] = field(default_factory=list)
    result: TurnResult | None = None
    hygiene: CompactionResult | None = None
    policy: CompactionResult | None = None
    """The context policy's compaction applied before the turn (``cold_start``, ``idle``)."""

    @classmethod
    def of(cls, outcome: TurnOutcome, *, notify: bool) -> TurnReply:
        """The reply to a turn's outcome, one notice per compaction the chat is told of."""
        return cls(
            outcome.text,
            compaction_notices(outcome.compactions, notify=notify),
            outcome.result,
            outcome.hygiene,
            outcome.policy,
        )


class SessionRuntime:
    """A loaded session: its record and model, and the agent its turns run in."""

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
        self.repo: SessionHostStore = services.repo
        """The store as the session uses it (its narrow port)."""
        self.admin_tools = admin_tools
        """Whether the session offers admin-only tools (an admin's private chat)."""
        self.record = record
        self.billing = billing or Billing(record.id)
        """Whose calls this session's are: the session, and the user of the turn running."""
        self.model = model or services.models.get(record.model)
        """The session's model (``/model``): its provider, window, caching and prices."""
        self.clock = clock or SessionClock.measured_by(context, services.elapsed)
        config = services.config
        self.recorder = StoreRecorder(
            self.repo,
            record.id,
            self.model.info,
            self.model.provider.name,
            lambda: self.agent.cache_ttl(),
            self.billing,
        )
        self.job_origin = job_origin
        """Whose jobs the ``schedule`` tool adds, and in which chat: the user of the turn
        running (:meth:`note_turn_origin`; None: nobody, no tool)."""
        self.memory_owner = memory_owner if config.memory.enabled else None
        """Whose memory the session keeps (None: memory is off, or the chat has no owner)."""
        ports = SessionPorts(
            recorder=self.recorder,
            load_context=self._load_context,
            save_state=self._save_state,
            make_engine=self._new_engine,
            bill_to=self._bill_to,
            system_prompt=self._system_prompt if self.memory_owner else None,
            keep_facts=self._keep_facts if config.memory.flush_on_compaction else None,
            spans=services.spans,
        )
        self.agent = AgentSession(
            record.id,
            context,
            engine,
            self._tools(),
            ports,
            services.session_settings,
            self.model,
            self.clock,
            user_times,
        )
        """The session's agent: every turn, compaction and status read goes through it."""

    @property
    def session_id(self) -> int:
        """The stored session's id."""
        return self.record.id

    @property
    def context(self) -> list[Message]:
        """The session's in-context messages (the agent's, changed in place)."""
        return self.agent.context

    def _tools(self) -> ToolRegistry:
        """The configured built-ins, and the memory and recall tools when the session has a
        memory."""
        config = self.services.config
        limit = result_limit(config.agent.max_tool_result_tokens, self.model.context_length)
        outputs = ToolOutputs(self.repo, self.record.id, limit)
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
            tools.add(memory_tool(self.repo, self.memory_owner, limit))
            tools.add(recall_tool(self.repo, self.memory_owner, self.record.id))
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

    def _bill_to(self, user_key: str | None) -> None:
        self.billing.user_key = user_key

    async def _system_prompt(self, base_prompt: str) -> str:
        """The system prompt with a snapshot of the memory, as of now (for cold points)."""
        if self.memory_owner is None:
            return base_prompt
        entries = await self.repo.list_memories(self.memory_owner)
        return with_memory(base_prompt, entries)

    async def _keep_facts(self, facts: list[str]) -> None:
        """Merge a compaction's durable facts into the session owner's memory."""
        if self.memory_owner is None:
            return
        limit = self.services.config.memory.max_chars_per_user
        added = await merge_facts(self.repo, self.memory_owner, facts, limit)
        log.debug("session %s: %d fact(s) from a compaction kept", self.session_id, len(added))

    async def _load_context(self) -> list[Message]:
        """The session's in-context messages as stored, their media read back."""
        context = await self.repo.load_context(self.session_id)
        hydrate_context(context, BlobStore(self.services.config.media.blob_path()))
        return context

    async def _save_state(self, state: dict[str, Any]) -> None:
        await self.repo.update_session(self.session_id, engine_state=state)

    def _new_engine(self) -> ContextEngine:
        """A fresh engine of the session's kind (the agent loads its state into it)."""
        return build_engine(
            self.services,
            self.services.config.context.engine,
            self.clock,
            self.model.context_length,
            self.billing,
            has_memory=self.memory_owner is not None,
        )

    @classmethod
    async def open(
        cls, services: AgentServices, address: SessionAddress, *, fresh: bool = False
    ) -> SessionRuntime:
        """Load the active session for ``address`` (or start a new one with ``fresh``)."""
        repo: SessionHostStore = services.repo
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
        state = record.engine_state or {}
        await engine.on_session_start(record.id, engine.state_type.from_json(state))
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
        await runtime.agent.open(state)
        return runtime

    async def run_turn(
        self,
        address: SessionAddress,
        text: UserContent,
        *,
        source: TurnSource | None = None,
        sent_at: float | None = None,
        observer: ReplyObserver | None = None,
        approvals: ApprovalPort | None = None,
    ) -> TurnReply:
        """One turn of ``address``'s user: one call into the agent (see
        :meth:`AgentSession.run_turn`), its compactions told as notices."""
        self.note_turn_origin(address.job_origin)
        outcome = await self.agent.run_turn(
            text,
            source=source,
            sent_at=sent_at,
            user_key=address.user_key,
            observer=observer,
            approvals=approvals,
        )
        return TurnReply.of(outcome, notify=self.services.config.compression.notify)

    async def close(self) -> None:
        """Stop the session's agent (its background compactions, its engine)."""
        await self.agent.close()
