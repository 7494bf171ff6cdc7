"""The one interface every model provider offers the agent.

A provider takes chat-completions messages (see ``agent/types.py``) and tool schemas in
Anthropic form (``{"name", "description", "input_schema"}``), speaks its own wire format, and
returns a :class:`~agent.types.ModelResponse` with normalised usage. It raises only the typed
errors of ``agent/types.py``: ``PromptTooLongError``, ``ProviderTimeoutError``, ``ProviderError``.
"""

from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Literal

from agent.prompt_caching import MarkedHistory
from agent.types import Message, ModelResponse, ProviderError

ProviderName = Literal["anthropic", "openrouter", "openai_compat"]

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_MAX_RETRIES = 2
"""The SDK's retries of a main model call (``model.max_retries``), its only retry layer for
failures before the answer streams: ``1 + max_retries`` attempts (3), each bounded by
``model.timeout`` (120 s), the SDK waiting about 0.5 s then 1 s between them (exponential with
jitter, 8 s at most) or the server's ``retry-after`` (capped at :data:`MAX_RETRY_WAIT_SECONDS`
for Anthropic): at most about 3 x 120 + 2 x 60 = 480 s, then the user gets an apology. A stream
that broke off once it began, or an empty answer, is not the SDK's to retry: the agent loop
asks once more (``agent.loop.EMPTY_ANSWER_RETRIES``), a call with the same budget."""
MAX_RETRY_WAIT_SECONDS = 60.0
"""Longest server-requested ``retry-after`` wait honoured inside one call; longer waits are
cut to this so a worker is never parked for hours by one response header."""
RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses below 500 worth retrying (timeouts, lock conflicts, rate limits)."""


class Provider(ABC):
    """A model endpoint the agent can call."""

    name: ProviderName
    model: str
    native_anthropic: bool

    @abstractmethod
    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        model: str | None = None,
    ) -> ModelResponse:
        """One model call. ``model`` overrides the provider's default model for this call.

        Raises PromptTooLongError when the prompt does not fit the model's context,
        ProviderTimeoutError on a timeout, and ProviderError (with ``retryable``) otherwise.
        """

    @abstractmethod
    async def aclose(self) -> None:
        """Release the HTTP client."""

    def warm_up(self) -> None:
        """Start loading what the first call needs (an SDK import) in the background."""
        return None

    async def probe(self, model: str | None = None) -> None:
        """Check the key, the endpoint and ``model`` (default: the provider's) with a request
        that costs no tokens (``hermes doctor``). Raises ProviderError (ProviderConnectionError
        when the endpoint cannot be reached) when the check fails."""
        raise ProviderError(f"{self.name} cannot be checked without spending tokens")

    def open_session(self) -> ProviderSession:
        """Per-session request state for one chat session's calls (one per agent loop).

        The default keeps nothing; providers that can reuse the previous call's conversion
        return a session that does.
        """
        return ProviderSession(self)


TextSink = Callable[[str], None]
"""Told each piece of an answer's text as the model writes it (a live view of the reply)."""


class ProviderSession:
    """One chat session's calls to a provider, for providers that keep work across calls.

    :meth:`complete` takes the session's history with its cache-marked copies laid over it;
    between two calls the history may only grow (or the marks move). After anything else (a
    compaction, an edit in place) call :meth:`reset`. Raises what ``Provider.complete`` raises.
    """

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    async def complete(
        self,
        history: MarkedHistory,
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        model: str | None = None,
        on_text: TextSink | None = None,
    ) -> ModelResponse:
        """One model call for the session's history (the stateless default converts it all).

        ``on_text`` is told the answer's text as it streams, where the provider streams."""
        return await self.provider.complete(
            history.materialize(), tools=tools, max_tokens=max_tokens, model=model
        )

    def reset(self) -> None:
        """Forget work kept from earlier calls (the history was replaced or edited)."""


def is_retryable_status(status: int) -> bool:
    """Whether a later attempt may succeed where a response with this status failed."""
    return status in RETRYABLE_STATUSES or status >= 500


def error_details(body: Any) -> tuple[str | None, str]:
    """(error type, message) from an error body, whether wrapped in ``{"error": ...}`` or not."""
    if isinstance(body, dict):
        wrapped = body.get("error")
        inner: dict[str, Any] = wrapped if isinstance(wrapped, dict) else body
        error_type = inner.get("type") or inner.get("code")
        return (str(error_type) if error_type else None), str(inner.get("message") or "")
    return None, str(body or "")


def import_in_background(module: str) -> None:
    """Import ``module`` on a daemon thread (an SDK that takes seconds to import), so that
    start-up does not wait for it; the first real use waits only for what is left."""
    threading.Thread(
        target=importlib.import_module, args=(module,), name=f"import {module}", daemon=True
    ).start()
