"""What each part of the gateway needs of the store: one small protocol per consumer.

:class:`~gateway.store.repository.Repository` answers every query (45 public methods);
no consumer needs them all. Each consumer is annotated with the protocol below naming the
methods it calls, so a reader sees at the signature what delivery, a session or a command
may do to the database, and a test double or a second store need only those. The
repository implements every protocol (mypy checks it where the repository is handed in, and
in :mod:`gateway.store.repository`); the methods are documented there, in the
``repository_*`` module of their concern.

Protocols for one consumer each:

* :class:`DeliveryStore`: the deliverer (:mod:`gateway.delivery.deliverer`);
* :class:`LiveMessageStore`: live replies (:mod:`gateway.delivery.live_reply`);
* :class:`AdmissionStore`, :class:`TurnStore`, :class:`LifecycleStore`: the runner's three
  parts (:mod:`gateway.runtime.admission`, :mod:`gateway.runtime.turns`,
  :mod:`gateway.runtime.gateway`), :class:`GatewayStore` the three together;
* :class:`UserStore`: run-time access and budgets (:mod:`gateway.users.access`);
* :class:`UsageReportStore`: the ``/usage`` report (:mod:`gateway.reports.usage`);
* :class:`RecorderStore`: a session's recorder (:mod:`gateway.sessions.recorder`);
* :class:`SessionStore`: opening a session and billing auxiliary calls
  (:mod:`gateway.sessions.runtime`, :mod:`gateway.sessions.services`);
* :class:`CommandStore`: the chat commands (:mod:`gateway.commands`);
* :class:`DashboardStore`: the operators' pages and ``/metrics`` (:mod:`gateway.dashboard`).
* :class:`JobStore`: scheduled jobs (:mod:`gateway.jobs`: the tool, the scheduler, ``/jobs``).
* :class:`McpToolListStore`: the MCP servers' kept tool lists
  (:mod:`gateway.sessions.mcp_servers`).

:class:`ServicesStore` is the last four together: the store as
:class:`~gateway.sessions.services.AgentServices` carries it to the sessions and to the
commands, which reach it through the services.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agent.memory import MemoryStore
from agent.recall import RecallStore
from agent.tools.mcp.tool_lists import ToolListStore
from agent.tools.tool_output import ToolOutputStore

if TYPE_CHECKING:
    from agent.types import CompactionResult, Message, ToolCallRecord, Usage
    from gateway.messages.quarantine import DeadLetter
    from gateway.store.db import Store
    from gateway.store.job_records import JobRecord, NewJob
    from gateway.store.records import (
        CompactionRecord,
        InboundLink,
        InboundRecord,
        MessageRecord,
        ReplyRecord,
        SessionRecord,
        UsageGroup,
        VoiceAudio,
    )
    from gateway.store.repository_dashboard import DayUsageGroup, SessionListing, UserDaySpend
    from gateway.store.repository_dead_letters import DeadLetterRecord
    from gateway.store.repository_failover import FailoverState
    from gateway.store.repository_forget import ForgetReport, OwnedData
    from gateway.store.repository_tool_calls import ToolCallStats
    from gateway.store.repository_users import Access, AccessRecord, SpendRow, UsageGrouping
    from gateway.store.repository_voice import SpeechTotal

__all__ = [
    "AdmissionStore",
    "ApprovalStore",
    "CommandStore",
    "DashboardStore",
    "DeliveryStore",
    "GatewayStore",
    "InboundMarks",
    "LifecycleStore",
    "LiveMessageStore",
    "McpToolListStore",
    "RecorderStore",
    "ServicesStore",
    "SessionHostStore",
    "SessionStore",
    "TurnStore",
    "UsageReportStore",
    "UserStore",
]


@runtime_checkable
class DeliveryStore(Protocol):
    """Replies planned part by part, each part's id recorded once sent (the deliverer)."""

    async def plan_reply(
        self,
        platform: str,
        inbound_ids: Sequence[str],
        parts: Sequence[str],
        *,
        session_key: str,
        chat_id: str,
        thread_id: str | None = ...,
        closes_as: str = ...,
        failure: str | None = ...,
        voices: Mapping[int, VoiceAudio] | None = ...,
    ) -> ReplyRecord: ...

    async def record_sent_part(
        self, reply_id: int, index: int, platform_message_id: str, *, last: bool = ...
    ) -> None: ...

    async def fail_reply(self, reply_id: int, reason: str) -> None: ...

    async def live_messages(
        self, platform: str, chat_id: str, anchors: Sequence[str]
    ) -> list[str]: ...

    async def newest_inbound_before(self, reply_id: int) -> str | None: ...

    async def recent_chat_ids(
        self, platform: str, chat_id: str, *, limit: int = ...
    ) -> tuple[frozenset[str], frozenset[str]]: ...


class VoiceStore(Protocol):
    """Each chat's ``/voice`` mode and the characters spoken (voice replies, ``/voice``)."""

    async def voice_mode(self, platform: str, chat_id: str) -> str | None: ...

    async def set_voice_mode(self, platform: str, chat_id: str, mode: str) -> None: ...

    async def record_speech(
        self,
        *,
        user_key: str | None,
        session_key: str,
        provider: str,
        chars: int,
        cost_usd: float,
    ) -> None: ...

    async def spoken_chars_since(self, user_key: str, since: datetime) -> int: ...

    async def speech_totals(
        self, since: datetime, user_key: str | None = ...
    ) -> list[SpeechTotal]: ...


@runtime_checkable
class LiveMessageStore(Protocol):
    """The messages a reply shown live has in the chat (live replies)."""

    async def live_messages(
        self, platform: str, chat_id: str, anchors: Sequence[str]
    ) -> list[str]: ...

    async def record_live_message(
        self, platform: str, chat_id: str, anchor: str, index: int, platform_message_id: str
    ) -> None: ...


@runtime_checkable
class ApprovalStore(Protocol):
    """Tools a chat allowed for good, and the approval prompts sent (tool approvals)."""

    async def tool_always_allowed(self, platform: str, chat_id: str, tool: str) -> bool: ...

    async def allow_tool_always(
        self, platform: str, chat_id: str, tool: str, user_id: str | None
    ) -> None: ...

    async def record_approval_prompt(
        self, platform: str, chat_id: str, platform_message_id: str, tool: str
    ) -> None: ...

    async def record_approval_decision(
        self, platform: str, chat_id: str, platform_message_id: str, decision: str
    ) -> None: ...

    async def open_approval_prompts(
        self, platform: str, before: datetime
    ) -> list[tuple[str, str]]: ...


@runtime_checkable
class InboundMarks(Protocol):
    """The one write every part of the runner makes: a received message's new status."""

    async def mark_inbound(
        self,
        platform: str,
        platform_message_id: str,
        status: str,
        *,
        reply_platform_ids: list[str] | None = ...,
    ) -> None: ...


@runtime_checkable
class AdmissionStore(InboundMarks, Protocol):
    """A received message recorded once, and who was refused (admission)."""

    async def record_inbound(
        self,
        platform: str,
        platform_message_id: str,
        *,
        session_key: str,
        chat_id: str,
        user_id: str | None,
        text: str,
        payload: dict[str, Any] | None = ...,
    ) -> bool: ...

    async def refused_users(self, platform: str) -> set[str]: ...


@runtime_checkable
class TurnStore(InboundMarks, Protocol):
    """What a resumed batch reads back: its inbound records and a reply half sent (the turn
    runner)."""

    async def inbound_records(
        self, platform: str, platform_message_ids: Sequence[str]
    ) -> dict[str, InboundRecord]: ...

    async def get_reply(self, reply_id: int) -> ReplyRecord | None: ...


@runtime_checkable
class WebhookInbox(Protocol):
    """Updates standbys received by webhook, as the leader takes them in (failover)."""

    async def waiting_webhook_updates(
        self, platform: str, limit: int = ...
    ) -> list[dict[str, Any]]: ...

    async def drop_webhook_updates(self, platform: str, update_ids: list[int]) -> None: ...


class LifecycleStore(InboundMarks, Protocol):
    """What was left pending, where catch-up starts, quarantined updates (the daemon's
    lifecycle: start, resume, idle waits, health, housekeeping)."""

    async def pending_inbound(self, platform: str | None = ...) -> list[InboundRecord]: ...

    async def failover_state(self) -> FailoverState | None: ...

    async def newest_inbound_per_chat(self, platform: str) -> dict[str, str]: ...

    async def add_dead_letter(self, letter: DeadLetter) -> bool: ...

    async def count_dead_letters(self, platform: str | None = ...) -> int: ...

    async def prune_dead_letters(self, before: datetime) -> int: ...


@runtime_checkable
class GatewayStore(AdmissionStore, TurnStore, LifecycleStore, Protocol):
    """The three parts of the runner together (what the composition root hands it)."""


@runtime_checkable
class UserStore(Protocol):
    """Run-time access decisions and spend (access and budgets)."""

    async def access_records(self, platform: str | None = ...) -> list[AccessRecord]: ...

    async def spend_since(self, since: datetime, user_key: str | None = ...) -> float: ...


@runtime_checkable
class UsageReportStore(Protocol):
    """A session's usage and compactions (the ``/usage`` report)."""

    async def usage_breakdown(self, session_id: int) -> list[UsageGroup]: ...

    async def list_compactions(self, session_id: int) -> list[CompactionRecord]: ...


@runtime_checkable
class UsageSink(Protocol):
    """Where the usage of every model call is stored, with its cost and whose it was."""

    async def record_usage(
        self,
        session_id: int | None,
        usage: Usage,
        *,
        provider: str,
        cost_usd: float,
        purpose: str = ...,
        last_prompt_tokens: int | None = ...,
        visit_start: bool = ...,
        cache_write_1h_tokens: int | None = ...,
        user_key: str | None = ...,
    ) -> None: ...


@runtime_checkable
class RecorderStore(UsageSink, Protocol):
    """What a turn produces: messages, usage, tool calls, compactions (a session's recorder)."""

    async def record_tool_call(
        self,
        session_id: int | None,
        call: ToolCallRecord,
        *,
        started_at: datetime,
        user_key: str | None = ...,
    ) -> None: ...

    async def record_turn_stop(
        self,
        session_id: int | None,
        reason: str,
        requests: int,
        *,
        stopped_at: datetime,
        user_key: str | None = ...,
    ) -> None: ...

    async def append_messages(
        self,
        session_id: int,
        messages: list[Message],
        token_counts: list[int],
        *,
        kind: str = ...,
        platform_message_id: str | None = ...,
        answers: InboundLink | None = ...,
    ) -> list[int]: ...

    async def apply_compaction(
        self, session_id: int, result: CompactionResult, new_token_counts: dict[int, int]
    ) -> CompactionRecord: ...

    async def update_session(self, session_id: int, **fields: Any) -> None: ...


@runtime_checkable
class SessionStore(UsageSink, Protocol):
    """Opening a session (the active one per key, its context and message times), saving
    its engine's state, billing auxiliary calls, and the store for the engines' archive."""

    @property
    def store(self) -> Store: ...

    async def get_or_create_session(
        self,
        key: str,
        *,
        platform: str,
        chat_id: str,
        user_id: str | None = ...,
        engine: str = ...,
    ) -> SessionRecord: ...

    async def start_new_session(
        self,
        key: str,
        *,
        platform: str,
        chat_id: str,
        user_id: str | None = ...,
        engine: str = ...,
    ) -> SessionRecord: ...

    async def update_session(self, session_id: int, **fields: Any) -> None: ...

    async def load_context(self, session_id: int) -> list[Message]: ...

    async def user_message_times(self, session_id: int) -> list[float]: ...


@runtime_checkable
class CommandStore(Protocol):
    """What the chat commands read and change: ``/model``, ``/allow`` and ``/deny``,
    ``/usage``, ``/status``, ``/forget``."""

    async def update_session(self, session_id: int, **fields: Any) -> None: ...

    async def count_messages(self, session_id: int) -> int: ...

    async def list_compactions(self, session_id: int) -> list[CompactionRecord]: ...

    async def set_access(
        self,
        platform: str,
        *,
        user_id: str | None = ...,
        username: str | None = ...,
        access: Access,
        set_by: str,
    ) -> None: ...

    async def usage_by(
        self, grouping: UsageGrouping, since: datetime, user_key: str | None = ...
    ) -> list[SpendRow]: ...

    async def tool_call_stats(
        self, since: datetime, user_key: str | None = ..., *, per_user: bool = ...
    ) -> list[ToolCallStats]: ...

    async def turn_stops_since(self, since: datetime, user_key: str | None = ...) -> int: ...

    async def owned_data(self, platform: str, user_id: str) -> OwnedData: ...

    async def forget_user(self, platform: str, user_id: str, owned: OwnedData) -> ForgetReport: ...


class JobStore(Protocol):
    """Scheduled jobs and users' time zones (:mod:`gateway.store.repository_jobs`)."""

    async def add_job(self, job: NewJob, *, max_per_user: int) -> JobRecord: ...

    async def pending_jobs(self, platform: str, user_id: str) -> list[JobRecord]: ...

    async def cancel_job(self, platform: str, user_id: str, job_id: int) -> bool: ...

    async def disable_job(self, job_id: int) -> None: ...

    async def next_job_time(self, platforms: Collection[str]) -> datetime | None: ...

    async def due_jobs(self, now: datetime, platforms: Collection[str]) -> list[JobRecord]: ...

    async def claim_job(
        self, job: JobRecord, *, next_run_at: datetime | None, run: dict[str, Any]
    ) -> bool: ...

    async def time_zone(self, platform: str, user_id: str) -> str | None: ...

    async def set_time_zone(self, platform: str, user_id: str, time_zone: str) -> None: ...


@runtime_checkable
class SessionHostStore(
    SessionStore, RecorderStore, MemoryStore, RecallStore, ToolOutputStore, Protocol
):
    """The turn path: what a loaded session's host uses (:mod:`gateway.sessions.runtime`):
    opening the session, recording its turns, its memory, recall and kept tool outputs."""


@runtime_checkable
class ServicesStore(
    SessionHostStore, UsageReportStore, CommandStore, JobStore, VoiceStore, Protocol
):
    """The store as the shared services carry it: to each session (opening it, its
    recorder, its memory) and to the commands and the ``/usage`` report, which reach it
    through them."""


@runtime_checkable
class DashboardStore(Protocol):
    """What the operators' pages read (spend, sessions, users, totals) and the one thing they
    change: an access decision, as ``/allow``, ``/deny`` and ``hermes users`` store it."""

    async def usage_groups_by_day(
        self, since: datetime, session_id: int | None = ...
    ) -> list[DayUsageGroup]: ...

    async def compactions_since(self, since: datetime) -> list[CompactionRecord]: ...

    async def usage_by(
        self, grouping: UsageGrouping, since: datetime, user_key: str | None = ...
    ) -> list[SpendRow]: ...

    async def spend_since(self, since: datetime, user_key: str | None = ...) -> float: ...

    async def spend_by_user_and_day(self, since: datetime) -> list[UserDaySpend]: ...

    async def tool_call_stats(
        self, since: datetime, user_key: str | None = ..., *, per_user: bool = ...
    ) -> list[ToolCallStats]: ...

    async def speech_totals(
        self, since: datetime, user_key: str | None = ...
    ) -> list[SpeechTotal]: ...

    async def search_sessions(
        self, text: str = ..., *, limit: int = ...
    ) -> list[SessionListing]: ...

    async def get_session(self, session_id: int) -> SessionRecord | None: ...

    async def failover_state(self) -> FailoverState | None: ...

    async def all_messages(self, session_id: int) -> list[MessageRecord]: ...

    async def usage_breakdown(self, session_id: int) -> list[UsageGroup]: ...

    async def list_compactions(self, session_id: int) -> list[CompactionRecord]: ...

    async def access_records(self, platform: str | None = ...) -> list[AccessRecord]: ...

    async def set_access(
        self,
        platform: str,
        *,
        user_id: str | None = ...,
        username: str | None = ...,
        access: Access,
        set_by: str,
    ) -> None: ...

    async def inbound_counts(self) -> dict[tuple[str, str], int]: ...

    async def compaction_counts(self) -> dict[tuple[str, str], int]: ...

    async def count_dead_letters(self, platform: str | None = ...) -> int: ...

    async def list_dead_letters(self, limit: int = ...) -> list[DeadLetterRecord]: ...

    async def delete_dead_letter(self, letter_id: int) -> bool: ...

    async def failed_inbound(self, limit: int = ...) -> list[InboundRecord]: ...

    async def schema_revisions(self) -> frozenset[str] | None: ...

    async def all_pending_jobs(self, limit: int = ...) -> list[JobRecord]: ...

    async def summary_costs(self, session_id: int) -> list[tuple[datetime, float]]: ...


McpToolListStore = ToolListStore
"""The MCP servers' kept tool lists (``load_mcp_tool_lists``, ``save_mcp_tool_list``): the
protocol is the agent's, the repository implements it."""
