"""Any chat-completions endpoint: OpenRouter, OpenAI, local llama.cpp / vLLM / Ollama servers.

The agent's messages already are chat-completions messages, so they go out as they are, minus
bookkeeping keys; ``cache_control`` inside content parts stays, which is how OpenRouter forwards
prompt-cache breakpoints to Claude. Usage is normalised so that ``prompt_tokens`` keeps meaning
the prompt's real size while ``input_tokens`` counts only the uncached part.
"""

from __future__ import annotations

from typing import Any

from agent.prompt_caching import MarkedHistory
from agent.providers.base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    Provider,
    ProviderName,
    ProviderSession,
    TextSink,
    import_in_background,
)
from agent.providers.openai.response import usage_from_openai as usage_from_openai
from agent.providers.openai.wire import OpenAIWireHistory, full_openai_body
from agent.providers.wire_body import WireBody
from agent.types import (
    Message,
    ModelResponse,
)

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"


def to_openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic-form tool schemas as chat-completions function tools."""
    converted = []
    for tool in tools:
        if tool.get("type") == "function":
            converted.append(tool)
            continue
        function = {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
        }
        converted.append({"type": "function", "function": function})
    return converted


class OpenAICompatProvider(Provider):
    """A chat-completions endpoint; ``name="openrouter"`` marks OpenRouter (cache markers on)."""

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None,
        name: ProviderName = "openai_compat",
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        if name not in ("openai_compat", "openrouter"):
            raise ValueError(
                f"OpenAICompatProvider name must be openai_compat or openrouter: {name}"
            )
        self.name = name
        self.model = model
        self.native_anthropic = False
        if name == "openrouter" and not base_url:
            base_url = OPENROUTER_BASE_URL
        # OpenAI's own API refuses `max_tokens` for newer models; other servers only know it.
        self._tokens_param = (
            "max_completion_tokens"
            if not base_url or "api.openai.com" in base_url
            else "max_tokens"
        )
        self._client_settings: dict[str, Any] = {
            "api_key": api_key,
            "base_url": base_url,
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._sdk_client: Any = None

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(name={self.name!r}, model={self.model!r})"

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        model: str | None = None,
    ) -> ModelResponse:
        """One chat-completions call; returns the assistant message and normalised usage."""
        head = self.request_head(tools, max_tokens=max_tokens, model=model)
        return await self.send(WireBody([full_openai_body(messages, head)]), head["model"])

    def request_head(
        self, tools: list[dict[str, Any]] | None, *, max_tokens: int, model: str | None
    ) -> dict[str, Any]:
        """The body's fields besides ``messages``, in the order they are sent."""
        head: dict[str, Any] = {"model": model or self.model, self._tokens_param: max_tokens}
        if tools:
            head["tools"] = to_openai_tools(tools)
        if self.name == "openrouter":
            head["usage"] = {"include": True}
        return head

    def open_session(self) -> OpenAICompatSession:
        """A session that keeps its encoded messages across calls."""
        return OpenAICompatSession(self)

    async def send(self, body: WireBody, model: str) -> ModelResponse:
        """POST an encoded body (see :func:`agent.providers.openai.sdk.send`)."""
        from agent.providers.openai import sdk as openai_sdk

        return await openai_sdk.send(self._client, body, model)

    def warm_up(self) -> None:
        """Import the SDK in a background thread, so the first call does not wait for it."""
        import_in_background("agent.providers.openai.sdk")

    async def probe(self, model: str | None = None) -> None:
        """List the endpoint's models (free; on OpenRouter, whose list is public, the key is
        checked first) and look for ``model`` among them."""
        from agent.providers.openai import sdk as openai_sdk

        await openai_sdk.probe(
            self._client, model or self.model, check_key=self.name == "openrouter"
        )

    @property
    def _client(self) -> Any:
        """The SDK client, built (and the SDK imported) on first use."""
        if self._sdk_client is None:
            from agent.providers.openai.sdk import build_client

            self._sdk_client = build_client(**self._client_settings)
        return self._sdk_client

    async def aclose(self) -> None:
        """Close the SDK's HTTP client (if one was ever built)."""
        if self._sdk_client is not None:
            await self._sdk_client.close()


class OpenAICompatSession(ProviderSession):
    """A chat session's calls: encoded messages kept, only new ones encoded each call."""

    def __init__(self, provider: OpenAICompatProvider) -> None:
        super().__init__(provider)
        self._compat = provider
        self.wire = OpenAIWireHistory()

    async def complete(
        self,
        history: MarkedHistory,
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int,
        model: str | None = None,
        on_text: TextSink | None = None,
    ) -> ModelResponse:
        """One chat-completions call for the session's history (not streamed: the answer
        arrives whole, so ``on_text`` is not told anything)."""
        head = self._compat.request_head(tools, max_tokens=max_tokens, model=model)
        body = self.wire.body(history.messages, history.marked, head)
        return await self._compat.send(body, head["model"])

    def reset(self) -> None:
        """Encode the whole history again on the next call."""
        self.wire.reset()
