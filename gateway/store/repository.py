"""The repository: the one place that speaks SQL to the store.

:class:`Repository` is assembled from one class per concern, each in its own module:

* sessions (``repository_sessions``): the active session per key, ``/new``, engine state;
* messages (``repository_messages``): appending, the in-context list, the full history;
* compactions (``repository_compactions``): applying a new context, the record of attempts;
* usage (``repository_usage``): tokens and cost per API call, totals for ``/usage``;
* users (``repository_users``): run-time access and spend per user (budgets);
* forget (``repository_forget``): deleting one user's data (``/forget``);
* inbound (``repository_inbound``): received platform messages, exactly-once handling;
* replies (``repository_replies``): replies planned part by part, closing what they answer;
* catch-up (``repository_catchup``): where a platform's history replay starts;
* dead letters (``repository_dead_letters``): quarantined updates;
* dashboard (``repository_dashboard``): sums over the whole store for the operators' pages;
* export (``repository_export``): a session as JSON-safe dicts;
* memory (``repository_memory``): each user's (or group chat's) remembered entries;
* jobs (``repository_jobs``): scheduled jobs and each user's time zone;
* recall (``repository_recall``): searching the earlier sessions an owner may see;
* MCP tool lists and large tool outputs (``repository_mcp``);
* tool calls (``repository_tool_calls``): each call's tool, time and outcome, per-tool sums;
* voice (``repository_voice``): each chat's ``/voice`` mode, characters spoken per answer;
* failover (``repository_failover``): who leads, the standbys seen, takeovers; the webhook
  inbox (``webhook_inbox``): updates a standby received, for the leader.

Reads run concurrently. Every write is a job handed to the store's writer
(:mod:`gateway.store.writer`), which commits whatever jobs are queued together in one
transaction (group commit): under load one fsync covers many messages, and each caller still
gets its own result or error back only after its job is durable.

No consumer takes the whole repository: each is typed with the few methods it calls, one
protocol per consumer in :mod:`gateway.store.ports`, which the repository implements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.store.repository_approvals import ApprovalQueries
from gateway.store.repository_base import NotFoundError, StoreError
from gateway.store.repository_catchup import CatchUpQueries
from gateway.store.repository_dashboard import DashboardQueries
from gateway.store.repository_dead_letters import DeadLetterQueries
from gateway.store.repository_export import ExportQueries
from gateway.store.repository_failover import FailoverQueries
from gateway.store.repository_forget import ForgetQueries
from gateway.store.repository_inbound import InboundQueries
from gateway.store.repository_jobs import JobQueries
from gateway.store.repository_live import LiveMessageQueries
from gateway.store.repository_mcp import McpToolListQueries, ToolOutputQueries
from gateway.store.repository_memory import MemoryQueries
from gateway.store.repository_messages import MessageQueries
from gateway.store.repository_recall import RecallQueries
from gateway.store.repository_replies import ReplyQueries
from gateway.store.repository_sessions import (
    DEFAULT_ENGINE,
    UPDATABLE_SESSION_FIELDS,
    SessionQueries,
)
from gateway.store.repository_tool_calls import ToolCallQueries
from gateway.store.repository_turn_stops import TurnStopQueries
from gateway.store.repository_usage import UsageQueries
from gateway.store.repository_users import UserQueries
from gateway.store.repository_voice import VoiceQueries
from gateway.store.webhook_inbox import WebhookInboxQueries

__all__ = [
    "DEFAULT_ENGINE",
    "UPDATABLE_SESSION_FIELDS",
    "NotFoundError",
    "Repository",
    "StoreError",
]


class Repository(
    SessionQueries,
    MessageQueries,
    ExportQueries,  # includes CompactionQueries
    UsageQueries,
    UserQueries,
    ForgetQueries,
    InboundQueries,
    ReplyQueries,
    CatchUpQueries,
    DeadLetterQueries,
    LiveMessageQueries,
    DashboardQueries,
    FailoverQueries,
    WebhookInboxQueries,
    MemoryQueries,
    ApprovalQueries,
    JobQueries,
    RecallQueries,
    McpToolListQueries,
    ToolOutputQueries,
    ToolCallQueries,
    TurnStopQueries,
    VoiceQueries,
):
    """Every query the gateway makes, over one open :class:`gateway.store.Store`.

    ``Repository(store)``; all methods are coroutines (``export_session`` an async iterator).
    """


if TYPE_CHECKING:
    from gateway.store import ports

    def _implements_every_port(
        repo: Repository,
    ) -> tuple[
        ports.DeliveryStore,
        ports.LiveMessageStore,
        ports.ApprovalStore,
        ports.GatewayStore,
        ports.UserStore,
        ports.ServicesStore,
        ports.DashboardStore,
        ports.McpToolListStore,
        ports.VoiceStore,
    ]:
        """mypy checks here that the repository implements each port (``ServicesStore``
        includes the session, recorder, report and command ports)."""
        return repo, repo, repo, repo, repo, repo, repo, repo, repo
