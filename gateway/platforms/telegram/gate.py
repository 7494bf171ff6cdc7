"""The rate limiter every Bot API request passes through, with the runner's send gate in it.

python-telegram-bot hands each request to the rate limiter, which calls it when its turn
comes: the gate runs right before the request leaves (after any wait for the limits), so a
gateway that stopped leading while a request waited sends nothing (failover).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from telegram.ext import AIORateLimiter


class GatedRateLimiter(AIORateLimiter):  # type: ignore[type-arg]
    """:class:`AIORateLimiter` that asks ``gate`` (which raises to refuse) before each request."""

    def __init__(self, gate: Callable[[], None], **limits: Any) -> None:
        super().__init__(**limits)
        self._gate = gate

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, Any]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> Any:
        """Rate-limit as AIORateLimiter does; the gate runs just before the request is made."""

        async def gated(*call_args: Any, **call_kwargs: Any) -> Any:
            self._gate()
            return await callback(*call_args, **call_kwargs)

        return await super().process_request(gated, args, kwargs, endpoint, data, rate_limit_args)
