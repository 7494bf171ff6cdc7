"""Claude through the Anthropic Messages API (the official ``anthropic`` SDK).

Every call streams: the SDK refuses a non-streaming call whose ``max_tokens`` could take longer
than ten minutes, and a stream costs nothing extra when only the final message is wanted.
The SDK itself is behind :mod:`agent.providers.anthropic.sdk`, imported on first use.
"""

from __future__ import annotations

from typing import Any

from agent.prompt_caching import MarkedHistory
from agent.providers.anthropic.wire import AnthropicWireHistory, full_body
from agent.providers.base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    Provider,
    ProviderName,
    ProviderSession,
    TextSink,
    import_in_background,
)
from agent.providers.wire_body import WireBody
from agent.types import Message, ModelResponse


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
        self._client_settings: dict[str, Any] = {
            "api_key": api_key,
            "base_url": base_url,
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._base_url = base_url
        self._sdk_client: Any = None

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self._base_url!r})"

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

    async def send(self, body: WireBody, on_text: TextSink | None = None) -> ModelResponse:
        """POST an encoded streamed Messages body (see :func:`anthropic_sdk.send`)."""
        from agent.providers.anthropic import sdk as anthropic_sdk

        return await anthropic_sdk.send(self._client, body, on_text)

    def warm_up(self) -> None:
        """Import the SDK in a background thread, so the first call does not wait for it."""
        import_in_background("agent.providers.anthropic.sdk")

    async def probe(self, model: str | None = None) -> None:
        """Count the tokens of a one-word prompt (free): the key, endpoint and model answer."""
        from agent.providers.anthropic import sdk as anthropic_sdk

        await anthropic_sdk.probe(self._client, model or self.model)

    @property
    def _client(self) -> Any:
        """The SDK client, built (and the SDK imported) on first use."""
        if self._sdk_client is None:
            from agent.providers.anthropic.sdk import CappedRetryClient

            self._sdk_client = CappedRetryClient(**self._client_settings)
        return self._sdk_client

    async def aclose(self) -> None:
        """Close the SDK's HTTP client (if one was ever built)."""
        if self._sdk_client is not None:
            await self._sdk_client.close()


class AnthropicSession(ProviderSession):
    """A chat session's calls: the converted, encoded history is kept and only the new part
    converted each call (see :class:`~agent.providers.anthropic.wire.AnthropicWireHistory`)."""

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
        on_text: TextSink | None = None,
    ) -> ModelResponse:
        """One streamed Messages call for the session's history (``on_text``: told the
        answer's text as it streams)."""
        body = self.wire.body(
            history.messages,
            history.marked,
            tools,
            model=model or self._anthropic.model,
            max_tokens=max_tokens,
        )
        return await self._anthropic.send(body, on_text)

    def reset(self) -> None:
        """Convert the whole history again on the next call."""
        self.wire.reset()
