"""The ``anthropic`` SDK behind :class:`~agent.providers.anthropic.provider.AnthropicProvider`.

Importing the SDK takes seconds (thousands of pydantic models), so this module is imported on
the first call, or ahead of it in the background (:meth:`Provider.warm_up`), never at start-up.
SDK errors become the typed errors of ``agent/types.py`` here and nowhere else.
"""

from __future__ import annotations

import importlib
from typing import Any

import anthropic
from anthropic.types import Message as SDKMessage

from agent.providers.anthropic.response import from_anthropic_message
from agent.providers.anthropic.stream_events import StreamedMessage
from agent.providers.base import (
    MAX_RETRY_WAIT_SECONDS,
    TextSink,
    error_details,
    is_retryable_status,
)
from agent.providers.wire_body import WireBody
from agent.types import (
    IncompleteResponseError,
    ModelResponse,
    PromptTooLongError,
    ProviderConnectionError,
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


class CappedRetryClient(anthropic.AsyncAnthropic):
    """The SDK client, with server-requested retry waits capped (the SDK honours any length)."""

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        return min(super()._calculate_retry_timeout(*args, **kwargs), MAX_RETRY_WAIT_SECONDS)


def map_anthropic_error(exc: anthropic.APIError) -> ProviderError:
    """The typed error for an SDK error (the API key never appears in any of them)."""
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderTimeoutError(f"Anthropic request timed out: {exc}", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderConnectionError(f"cannot reach the Anthropic API: {exc}", retryable=True)
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


def _broke_off(exc: Exception) -> IncompleteResponseError:
    """A stream cut off mid-answer: the SDK's retries are over once it began, so it is asked
    again as an incomplete answer (never an apology for an unreachable service)."""
    return IncompleteResponseError(f"Anthropic stream broke off: {exc!r}", retryable=True)


async def send(
    client: anthropic.AsyncAnthropic, body: WireBody, on_text: TextSink | None = None
) -> ModelResponse:
    """POST an encoded streamed Messages body through the SDK (its retries, errors, events).

    The answer's text is told to ``on_text`` as it streams, if given. The events are read as
    the JSON the server sent and folded by :class:`StreamedMessage` (no typed model per event).

    A long body goes out as pieces with its length (no re-encoding, no joining); a short
    one is joined, since one write costs less than several.
    """
    content: WireBody | bytes = body if len(body) > JOIN_BELOW_BYTES else body.to_bytes()
    request = client.post(
        "/v1/messages",
        cast_to=SDKMessage,
        content=content,
        options={"headers": {"Content-Length": str(len(body))}},
        stream=True,
        stream_cls=anthropic.AsyncStream[object],
    )
    streamed = StreamedMessage()
    began = False
    try:
        stream = await request
        began = True
        async with stream:
            async for event in stream:
                if not isinstance(event, dict):
                    continue
                text = streamed.add(event)
                if text and on_text is not None:
                    on_text(text)
    except anthropic.APIConnectionError as exc:
        if began and not isinstance(exc, anthropic.APITimeoutError):
            # Depending on when the connection drops, the SDK wraps a cut-off stream too.
            raise _broke_off(exc) from exc
        raise map_anthropic_error(exc) from exc
    except anthropic.APIError as exc:
        raise map_anthropic_error(exc) from exc
    except _TRANSPORT_ERRORS as exc:
        raise _broke_off(exc) from exc
    final = streamed.finish()
    if final is None or final.get("stop_reason") is None:
        # Every complete answer says why it stopped; this stream ended before message_stop.
        raise IncompleteResponseError(
            "Anthropic stream ended before the answer was complete", retryable=True
        )
    return from_anthropic_message(final)


PROBE_MESSAGES = [{"role": "user", "content": "ping"}]


async def probe(client: anthropic.AsyncAnthropic, model: str) -> None:
    """Count the tokens of a one-word prompt: checks the key, the endpoint and the model name
    without spending tokens (count_tokens is free)."""
    try:
        await client.messages.count_tokens(model=model, messages=PROBE_MESSAGES)  # type: ignore[arg-type]
    except anthropic.APIError as exc:
        raise map_anthropic_error(exc) from exc
