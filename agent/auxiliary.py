"""The auxiliary-model client: side tasks such as compaction summaries, routed per task.

``auxiliary.<task>.{provider, model, base_url}`` picks the provider and model for a task;
``auto`` means the main provider and model. Usage of every auxiliary call is reported through
``on_usage`` so the host can store and bill it like any other call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.providers.base import Provider
from agent.types import Message, ProviderTimeoutError, Usage, reply_text

log = logging.getLogger(__name__)

DEFAULT_AUX_MAX_TOKENS = 4_096

UsageCallback = Callable[[str, str, Usage, object], Awaitable[None]]
"""``await on_usage(task, provider_name, usage, billed_to)`` after each auxiliary call;
``billed_to`` is what the calling client was bound to (:meth:`AuxiliaryClient.bound`: the
host's record of whose call it is), None for an unbound call."""
CallLLM = Callable[[str, list[Message], int | None], Awaitable[str]]
"""``await call_llm(task, messages, max_tokens) -> text``: the engines' auxiliary call."""


@dataclass(slots=True)
class AuxiliaryRoute:
    """Where one task's calls go."""

    provider: Provider
    model: str
    timeout: float = 120.0
    context_length: int | None = None


class AuxiliaryClient:
    """``call_llm(task, messages, max_tokens) -> text`` over per-task routes with a default."""

    def __init__(
        self,
        default: AuxiliaryRoute,
        routes: dict[str, AuxiliaryRoute] | None = None,
        on_usage: UsageCallback | None = None,
    ) -> None:
        self._default = default
        self._routes = dict(routes or {})
        self._on_usage = on_usage

    def route(self, task: str) -> AuxiliaryRoute:
        """The route a task uses."""
        return self._routes.get(task, self._default)

    def bound(self, billed_to: object) -> CallLLM:
        """A ``call_llm`` whose usage is reported with ``billed_to`` (a session's engine gets
        one, so its summaries are billed to the session and its user)."""

        async def call_llm(task: str, messages: list[Message], max_tokens: int | None) -> str:
            return await self.call_llm(task, messages, max_tokens, billed_to=billed_to)

        return call_llm

    async def call_llm(
        self,
        task: str,
        messages: list[Message],
        max_tokens: int | None,
        *,
        billed_to: object = None,
    ) -> str:
        """Run one auxiliary call and return its text. Raises the provider's typed errors."""
        route = self.route(task)
        try:
            async with asyncio.timeout(route.timeout):
                response = await route.provider.complete(
                    messages,
                    max_tokens=max_tokens or DEFAULT_AUX_MAX_TOKENS,
                    model=route.model,
                )
        except TimeoutError:
            raise ProviderTimeoutError(
                f"auxiliary {task} call timed out after {route.timeout:.0f}s", retryable=True
            ) from None
        if self._on_usage is not None:
            await self._on_usage(task, route.provider.name, response.usage, billed_to)
        return reply_text(response.message)

    async def aclose(self) -> None:
        """Close providers owned by the routes (the default one is closed by its owner)."""
        for route in self._routes.values():
            if route.provider is not self._default.provider:
                await route.provider.aclose()
