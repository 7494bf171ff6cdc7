"""What the web tools are allowed to do, as plain values the gateway hands in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

DEFAULT_FETCH_MAX_BYTES = 2_000_000
"""Enough for a long article or a report PDF; a larger body is cut there."""
DEFAULT_FETCH_TIMEOUT_SECONDS = 20.0
"""The whole fetch, redirects included: a turn should not hang on one slow site."""
DEFAULT_MAX_REDIRECTS = 5
"""Browsers allow about 20; a page worth reading is rarely more than a few hops away."""
DEFAULT_SEARCH_RESULTS = 5
BRAVE_SEARCH_URL = "https://api.search.brave.com/res/v1/web/search"


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """The search provider: a self-hosted SearXNG (``base_url``) or the Brave Search API.

    ``api_key`` is the secret's value (never logged); None when the provider needs none or
    it is not set (a search then answers with an error naming ``api_key_env``)."""

    provider: Literal["searxng", "brave"]
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    timeout_seconds: float = DEFAULT_FETCH_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True)
class WebToolSettings:
    """Limits of ``web_fetch`` and the provider of ``web_search`` (None: not configured)."""

    allow_private_addresses: bool = False
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    fetch_timeout_seconds: float = DEFAULT_FETCH_TIMEOUT_SECONDS
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    search: SearchSettings | None = None
