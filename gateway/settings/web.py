"""``web.*``: the limits of the ``web_fetch`` tool and the provider of ``web_search``.

Below the configuration schema; :meth:`WebSettings.tool_settings` hands the agent plain
values (the Brave key read from the variable ``api_key_env`` names, never from the file).
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import Field, model_validator

from agent.tools.web import SearchSettings, WebToolSettings
from agent.tools.web.settings import (
    BRAVE_SEARCH_URL,
    DEFAULT_FETCH_MAX_BYTES,
    DEFAULT_FETCH_TIMEOUT_SECONDS,
)
from gateway.settings.sections import Section


class WebSearchSettings(Section):
    """Where ``web_search`` asks: a self-hosted SearXNG (``base_url``, its JSON format
    enabled) or the Brave Search API (key in the variable named by ``api_key_env``)."""

    provider: Literal["searxng", "brave"] | None = None
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    """SearXNG's address; for Brave, another endpoint than the public API (a proxy)."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    @model_validator(mode="after")
    def _complete(self) -> WebSearchSettings:
        if self.provider == "searxng" and self.base_url is None:
            raise ValueError("base_url: required for provider searxng (your instance's address)")
        if self.provider == "brave" and self.api_key_env is None:
            raise ValueError("api_key_env: required for provider brave (e.g. BRAVE_API_KEY)")
        return self


class WebSettings(Section):
    """The built-in web tools (offered when ``web_fetch`` / ``web_search`` are in
    ``agent.tools``)."""

    allow_private_addresses: bool = False
    fetch_max_bytes: Annotated[int, Field(ge=1024)] = DEFAULT_FETCH_MAX_BYTES
    fetch_timeout_seconds: Annotated[float, Field(gt=0, le=300, allow_inf_nan=False)] = (
        DEFAULT_FETCH_TIMEOUT_SECONDS
    )
    search: WebSearchSettings = Field(default_factory=WebSearchSettings)

    def tool_settings(self) -> WebToolSettings:
        """The values the tools take; a Brave key that is not set is left None (a search
        then answers with an error naming the variable, the rest of the bot runs on)."""
        return WebToolSettings(
            allow_private_addresses=self.allow_private_addresses,
            fetch_max_bytes=self.fetch_max_bytes,
            fetch_timeout_seconds=self.fetch_timeout_seconds,
            search=self._search(),
        )

    def _search(self) -> SearchSettings | None:
        search = self.search
        if search.provider is None:
            return None
        key = os.environ.get(search.api_key_env, "").strip() if search.api_key_env else ""
        return SearchSettings(
            provider=search.provider,
            base_url=search.base_url or BRAVE_SEARCH_URL,
            api_key=key or None,
            api_key_env=search.api_key_env,
            timeout_seconds=self.fetch_timeout_seconds,
        )


def web_secret_env_names(settings: WebSettings) -> set[str]:
    """The variables holding web secrets (masked in the log)."""
    return {settings.search.api_key_env} if settings.search.api_key_env else set()
