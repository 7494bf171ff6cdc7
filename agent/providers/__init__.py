"""Model providers: one interface (:class:`Provider`), one module per wire protocol.

``build_provider("anthropic" | "openrouter" | "openai_compat", ...)`` is the only constructor the
rest of the agent needs.
"""

from __future__ import annotations

from agent.providers.base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    Provider,
    ProviderName,
)

PROVIDER_KINDS: tuple[ProviderName, ...] = ("anthropic", "openrouter", "openai_compat")

__all__ = ["PROVIDER_KINDS", "Provider", "ProviderName", "build_provider"]


def build_provider(
    kind: str,
    *,
    model: str,
    api_key: str,
    base_url: str | None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Provider:
    """The provider for ``kind``; ``base_url`` None means the service's public endpoint.

    Raises ValueError for an unknown kind. The SDKs are imported here, on first use, so that
    importing the agent does not pay for both.
    """
    if kind == "anthropic":
        from agent.providers.anthropic.provider import AnthropicProvider

        return AnthropicProvider(
            model, api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
    if kind in ("openrouter", "openai_compat"):
        from agent.providers.openai.provider import OpenAICompatProvider

        return OpenAICompatProvider(
            model,
            api_key,
            base_url,
            name="openrouter" if kind == "openrouter" else "openai_compat",
            timeout=timeout,
            max_retries=max_retries,
        )
    raise ValueError(f"unknown provider {kind!r}; expected one of {', '.join(PROVIDER_KINDS)}")
