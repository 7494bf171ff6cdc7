"""A chat completion as the agent's :class:`~agent.types.ModelResponse`, and HTTP errors as
typed provider errors; shared by the provider and the SDK module that calls the endpoint."""

from __future__ import annotations

from typing import Any

from agent.providers.base import error_details, is_retryable_status
from agent.types import (
    Message,
    ModelResponse,
    PromptTooLongError,
    ProviderError,
    Usage,
)

CONTEXT_OVERFLOW_MARKERS = ("context length", "maximum context", "too long", "context_length")
"""Phrases of the 400 errors servers give when the prompt exceeds the model's context."""


def _field(obj: Any, name: str, default: Any = None) -> Any:
    """Read ``name`` from an SDK model or a plain dict alike."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def usage_from_openai(usage: Any, model: str = "") -> Usage:
    """Chat-completions usage normalised.

    ``prompt_tokens`` there already includes cached tokens (``prompt_tokens_details.
    cached_tokens``) and, on OpenRouter, cache writes (``cache_write_tokens``): both are taken
    out of ``input_tokens`` so the three parts add up to the prompt's size again.
    """
    prompt = int(_field(usage, "prompt_tokens") or 0)
    details = _field(usage, "prompt_tokens_details")
    cached = int(_field(details, "cached_tokens") or 0)
    written = int(_field(details, "cache_write_tokens") or 0)
    return Usage(
        input_tokens=max(prompt - cached - written, 0),
        output_tokens=int(_field(usage, "completion_tokens") or 0),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        model=model,
    )


def status_error(status: int, body: Any, *, fallback: str = "") -> ProviderError:
    error_type, message = error_details(body)
    message = message or fallback
    text = f"model endpoint error {status} ({error_type or 'unknown'}): {message}"
    lowered = f"{message} {error_type or ''}".lower()
    if status in (400, 413) and any(marker in lowered for marker in CONTEXT_OVERFLOW_MARKERS):
        return PromptTooLongError(text, status=status)
    return ProviderError(text, status=status, retryable=is_retryable_status(status))


def _reply_message(message: Any) -> Message:
    """The SDK's assistant message as a chat-completions dict."""
    reply: Message = {"role": "assistant", "content": _field(message, "content")}
    calls = _field(message, "tool_calls") or []
    if calls:
        reply["tool_calls"] = [
            {
                "id": _field(call, "id"),
                "type": "function",
                "function": {
                    "name": _field(_field(call, "function"), "name"),
                    "arguments": _field(_field(call, "function"), "arguments") or "{}",
                },
            }
            for call in calls
        ]
    elif reply["content"] is None:
        reply["content"] = ""
    return reply


def reply_from_completion(response: Any, model: str) -> ModelResponse:
    """A chat completion as the reply and normalised usage; a 200 without choices (how
    OpenRouter reports some upstream failures) raises the error it carries."""
    if not response.choices:
        error = (getattr(response, "model_extra", None) or {}).get("error")
        code = _field(error, "code") if isinstance(error, dict) else None
        status = code if isinstance(code, int) else 502
        raise status_error(status, error, fallback="response without choices")
    choice = response.choices[0]
    return ModelResponse(
        message=_reply_message(choice.message),
        usage=usage_from_openai(response.usage, response.model or model),
        stop_reason=choice.finish_reason,
    )
