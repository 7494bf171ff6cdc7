"""Persists what the agent loop produces: messages, usage with its cost, compactions."""

from __future__ import annotations

from collections.abc import Callable

from agent.model_table import ModelInfo, cost_usd, pricing_for_call, writes_by_tier
from agent.tokens import cache_message_tokens
from agent.types import CompactionResult, Message, Usage
from gateway.sessions.services import Billing
from gateway.store.ports import RecorderStore

ANSWERS_KEY = "_answers"
"""Bookkeeping key of a user message: the :class:`InboundLink` of the messages it came from."""


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
        self._visit_start = False

    def mark_visit_start(self, cold: bool) -> None:
        """Before a turn: whether it found the prompt cache cold. Its first model call then
        rewrites the whole prefix, and its usage row says so (``/usage``: visit-start writes)."""
        self._visit_start = cold

    async def record_messages(self, messages: list[Message]) -> None:
        counts = [cache_message_tokens(m) for m in messages]
        # A user message remembers the platform message it came from, so a turn interrupted by
        # a crash is resumed after a restart instead of storing the message twice.
        platform_ids = {m.get("_platform_message_id") for m in messages}
        platform_id = platform_ids.pop() if len(platform_ids) == 1 else None
        # Every inbound message a user message was merged from points at it, in the same
        # commit: after a crash they resume as that one turn.
        answers = next((m[ANSWERS_KEY] for m in messages if m.get(ANSWERS_KEY)), None)
        ids = await self.repo.append_messages(
            self.session_id, messages, counts, platform_message_id=platform_id, answers=answers
        )
        for message, row_id in zip(messages, ids, strict=True):
            message["_id"] = row_id

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

    async def record_compaction(self, result: CompactionResult) -> None:
        new_counts = {
            index: cache_message_tokens(m)
            for index, m in enumerate(result.messages)
            if "_id" not in m
        }
        record = await self.repo.apply_compaction(self.session_id, result, new_counts)
        fresh = [m for m in result.messages if "_id" not in m]
        for message, row_id in zip(fresh, record.new_message_ids, strict=True):
            message["_id"] = row_id
        await self.repo.update_session(self.session_id, last_prompt_tokens=result.tokens_after)
