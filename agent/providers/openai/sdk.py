"""The ``openai`` SDK behind :class:`~agent.providers.openai.provider.OpenAICompatProvider`.

Imported on the first call or in the background ahead of it, never at start-up (the SDK takes
about a second to import). SDK errors become the typed errors of ``agent/types.py`` here.
"""

from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletion

from agent.providers.openai.response import reply_from_completion, status_error
from agent.providers.wire_body import WireBody
from agent.types import (
    ModelResponse,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
)

JOIN_BELOW_BYTES = 256 * 1024
"""Bodies up to this size are joined before sending (microseconds); longer ones stream."""


def map_openai_error(exc: openai.APIError) -> ProviderError:
    """The typed error for an SDK error (the API key never appears in any of them)."""
    if isinstance(exc, openai.APITimeoutError):
        return ProviderTimeoutError(f"model request timed out: {exc}", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderConnectionError(f"cannot reach the model endpoint: {exc}", retryable=True)
    if not isinstance(exc, openai.APIStatusError):
        return ProviderError(f"unexpected model endpoint response: {exc}")
    return status_error(exc.status_code, exc.body, fallback=str(exc))


def build_client(**settings: Any) -> openai.AsyncOpenAI:
    """The SDK client (``api_key``, ``base_url``, ``timeout``, ``max_retries``)."""
    return openai.AsyncOpenAI(**settings)


async def send(client: openai.AsyncOpenAI, body: WireBody, model: str) -> ModelResponse:
    """POST an encoded chat-completions body through the SDK (its retries and errors).

    A long body goes out as pieces with its length; the SDK replays it on a retry because it
    is rewindable. A short body is joined first.
    """
    content: WireBody | bytes = body if len(body) > JOIN_BELOW_BYTES else body.to_bytes()
    try:
        response = await client.post(
            "/chat/completions",
            cast_to=ChatCompletion,
            content=content,
            options={"headers": {"Content-Length": str(len(body))}},
        )
    except openai.APIError as exc:
        raise map_openai_error(exc) from exc
    return reply_from_completion(response, model)


async def probe(client: openai.AsyncOpenAI, model: str, *, check_key: bool) -> None:
    """List the endpoint's models and look for ``model``; with ``check_key``, ask for the key's
    own record first (OpenRouter's ``GET /key``), since its model list needs no key."""
    try:
        if check_key:
            await client.get("/key", cast_to=object)
        page = await client.models.list()
    except openai.APIError as exc:
        raise map_openai_error(exc) from exc
    listed = [entry.id for entry in page.data]
    if listed and model not in listed:
        raise ProviderError(
            f"the endpoint does not offer model {model!r} (it lists {len(listed)}: "
            f"{', '.join(listed[:5])}{', ...' if len(listed) > 5 else ''})"
        )
