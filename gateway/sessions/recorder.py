"""Persists what the agent loop produces: messages, usage with its cost, tool calls,
compactions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from agent.model_table import ModelInfo, cost_usd, pricing_for_call, writes_by_tier
from agent.session import TurnSource
from agent.tokens import cache_message_tokens
from agent.types import CompactionResult, Message, ToolCallRecord, Usage
from gateway.sessions.services import Billing
from gateway.store.ports import RecorderStore
from gateway.store.records import InboundLink


def utc_now() -> datetime:
    """The current time, timezone-aware UTC (the recorder's default clock)."""
    return datetime.now(UTC)


class StoreRecorder:
    """The :class:`agent.session_context.TurnRecorder` of one stored session."""

    def __init__(
        self,
        repo: RecorderStore,
        session_id: int,
        model: ModelInfo,
        provider: str,
        cache_ttl: Callable[[], str],
        billing: Billing | None = None,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self.repo = repo
        self.billing = billing or Billing(session_id)
        """Whose calls these are: each usage row carries the user of the turn it served."""
        self.session_id = session_id
        self.model = model
        self.provider = provider
        self.cache_ttl = cache_ttl
        """The session's cache tier now ("5m" or "1h"): writes a provider does not split by
        tier (OpenRouter) are priced at it."""
        self.now = now
        """The wall clock a tool call's start time is read from (UTC)."""
        self._visit_start = False

    def mark_visit_start(self, cold: bool) -> None:
        """Before a turn: whether it found the prompt cache cold. Its first model call then
        rewrites the whole prefix, and its usage row says so (``/usage``: visit-start writes)."""
        self._visit_start = cold

    async def record_messages(self, messages: list[Message]) -> list[int]:
        """Store new messages of the session; returns their row ids, in order."""
        counts = [cache_message_tokens(m) for m in messages]
        return await self.repo.append_messages(self.session_id, messages, counts)

    async def record_user_message(self, message: Message, answers: TurnSource | None) -> int:
        """Store the user message of a turn; returns its row id.

        ``answers`` names the inbound messages it was merged from: in the same commit they
        point at it, so after a crash they resume as this one turn instead of storing the
        message twice (the platform id of the last one is kept on the message too).
        """
        platform_id = answers.platform_message_ids[-1] if answers else None
        link = InboundLink(answers.platform, answers.platform_message_ids) if answers else None
        [row_id] = await self.repo.append_messages(
            self.session_id,
            [message],
            [cache_message_tokens(message)],
            platform_message_id=platform_id,
            answers=link,
        )
        return row_id

    async def record_usage(self, usage: Usage, purpose: str) -> None:
        info = pricing_for_call(usage.model, self.model)
        tier = self.cache_ttl()
        visit_start = self._visit_start and purpose == "chat"
        if visit_start:
            self._visit_start = False
        await self.repo.record_usage(
            self.session_id,
            usage,
            provider=self.provider,
            cost_usd=cost_usd(info, usage, tier),
            purpose=purpose,
            last_prompt_tokens=usage.prompt_tokens if purpose == "chat" else None,
            visit_start=visit_start,
            cache_write_1h_tokens=writes_by_tier(usage, tier)[1],
            user_key=self.billing.user_key,
        )

    async def record_tool_call(self, call: ToolCallRecord) -> None:
        """Store a finished tool call for the user of the turn; it started its run time
        before now (a call that never ran, now)."""
        started_at = self.now() - timedelta(seconds=call.run_seconds or 0.0)
        await self.repo.record_tool_call(
            self.session_id, call, started_at=started_at, user_key=self.billing.user_key
        )

    async def record_turn_stop(self, reason: str, requests: int) -> None:
        """Store that the turn stopped before its answer (the step limit), for the user whose
        turn it was."""
        await self.repo.record_turn_stop(
            self.session_id, reason, requests, stopped_at=self.now(), user_key=self.billing.user_key
        )

    async def record_compaction(self, result: CompactionResult) -> list[int]:
        """Persist a compaction in one transaction; returns the row ids of the messages of
        ``result.messages`` that were not stored yet (those without ``"_id"``), in order."""
        new_counts = {
            index: cache_message_tokens(m)
            for index, m in enumerate(result.messages)
            if "_id" not in m
        }
        record = await self.repo.apply_compaction(self.session_id, result, new_counts)
        await self.repo.update_session(self.session_id, last_prompt_tokens=result.tokens_after)
        return list(record.new_message_ids)
