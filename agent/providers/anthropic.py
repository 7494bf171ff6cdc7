"""Claude through the Anthropic Messages API (the official ``anthropic`` SDK).

Every call streams: the SDK refuses a non-streaming call whose ``max_tokens`` could take longer
than ten minutes, and a stream costs nothing extra when only the final message is wanted.
SDK errors become the typed errors of ``agent/types.py`` here and nowhere else.
"""

from __future__ import annotations

import importlib
from typing import Any

import anthropic
from anthropic.lib.streaming import AsyncMessageStreamManager
from anthropic.types import Message as SDKMessage
from anthropic.types import RawMessageStreamEvent

from agent.prompt_caching import MarkedHistory
from agent.providers.anthropic_convert import from_anthropic_message
from agent.providers.anthropic_wire import AnthropicWireHistory, full_body
from agent.providers.base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    MAX_RETRY_WAIT_SECONDS,
    Provider,
    ProviderName,
    ProviderSession,
    error_details,
    is_retryable_status,
)
from agent.providers.wire_body import WireBody
from agent.types import (
    Message,
    ModelResponse,
    PromptTooLongError,
    ProviderError,
    ProviderTimeoutError,
)

PROMPT_TOO_LONG_MARKER = "prompt is too long"
"""Text of the 400 error Anthropic returns when the prompt exceeds the context window."""
RETRYABLE_ERROR_TYPES = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)
"""Error types of an ``error`` event inside a stream that a later attempt may not meet."""


def _transport_error_types() -> tuple[type[Exception], ...]:
    """The HTTP library's transport errors: the SDK does not wrap them while a stream is read."""
    found: list[type[Exception]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(module_name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


_TRANSPORT_ERRORS = _transport_error_types()

JOIN_BELOW_BYTES = 256 * 1024
"""Bodies up to this size are joined before sending (microseconds); longer ones stream."""


class _CappedRetryAsyncAnthropic(anthropic.AsyncAnthropic):
    """The SDK client, with server-requested retry waits capped (the SDK honours any length)."""

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        return min(super()._calculate_retry_timeout(*args, **kwargs), MAX_RETRY_WAIT_SECONDS)


def map_anthropic_error(exc: anthropic.APIError) -> ProviderError:
    """The typed error for an SDK error (the API key never appears in any of them)."""
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderTimeoutError(f"Anthropic request timed out: {exc}", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderError(f"cannot reach the Anthropic API: {exc}", retryable=True)
    if not isinstance(exc, anthropic.APIStatusError):
        return ProviderError(f"unexpected Anthropic API response: {exc}")
    status = exc.status_code
    error_type, message = error_details(exc.body)
    message = message or str(exc)
    text = f"Anthropic API error {status} ({error_type or 'unknown'}): {message}"
    if PROMPT_TOO_LONG_MARKER in message.lower() or status == 413:
        return PromptTooLongError(text, status=status)
    if status == 200:
        # An `error` event in the middle of a stream: the HTTP status says nothing, the type does.
        return ProviderError(text, status=status, retryable=error_type in RETRYABLE_ERROR_TYPES)
    return ProviderError(text, status=status, retryable=is_retryable_status(status))


class AnthropicProvider(Provider):
    """Claude via the native Messages API; cache markers travel in the native layout."""

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self.name: ProviderName = "anthropic"
        self.model = model
        self.native_anthropic = True
        self._client = _CappedRetryAsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={str(self._client.base_url)!r})"

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        model: str | None = None,
    ) -> ModelResponse:
        """One streamed Messages call; returns the final message as a chat-completions reply."""
        body = full_body(messages, tools, model=model or self.model, max_tokens=max_tokens)
        return await self.send(WireBody([body]))

    def open_session(self) -> AnthropicSession:
        """A session that keeps its converted history across calls."""
        return AnthropicSession(self)

    async def send(self, body: WireBody) -> ModelResponse:
        """POST an encoded streamed Messages body through the SDK (its retries, errors, events).

        A long body goes out as pieces with its length (no re-encoding, no joining); a short
        one is joined, since one write costs less than several.
        """
        content: WireBody | bytes = body if len(body) > JOIN_BELOW_BYTES else body.to_bytes()
        request = self._client.post(
            "/v1/messages",
            cast_to=SDKMessage,
            content=content,
            options={"headers": {"Content-Length": str(len(body))}},
            stream=True,
            stream_cls=anthropic.AsyncStream[RawMessageStreamEvent],
        )
        try:
            async with AsyncMessageStreamManager(request) as stream:
                final = await stream.get_final_message()
        except anthropic.APIError as exc:
            raise map_anthropic_error(exc) from exc
        except _TRANSPORT_ERRORS as exc:
            raise ProviderError(f"Anthropic stream broke off: {exc!r}", retryable=True) from exc
        return from_anthropic_message(final)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self._client.close()


class AnthropicSession(ProviderSession):
    """A chat session's calls: the converted, encoded history is kept and only the new part
    converted each call (see :class:`~agent.providers.anthropic_wire.AnthropicWireHistory`)."""

    def __init__(self, provider: AnthropicProvider) -> None:
        super().__init__(provider)
        self._anthropic = provider
        self.wire = AnthropicWireHistory()

    async def complete(
        self,
        history: MarkedHistory,
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        model: str | None = None,
    ) -> ModelResponse:
        """One streamed Messages call for the session's history."""
        body = self.wire.body(
            history.messages,
            history.marked,
            tools,
            model=model or self._anthropic.model,
            max_tokens=max_tokens,
        )
        return await self._anthropic.send(body)

    def reset(self) -> None:
        """Convert the whole history again on the next call."""
        self.wire.reset()
