"""``web_search`` providers: a self-hosted SearXNG instance (its JSON API) and the Brave
Search API. Both answer with a list of :class:`SearchResult`; the provider's URL is the
operator's choice, so it is not held to the public-address rule of ``web_fetch``."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import aiohttp
import lxml.html
from lxml.etree import ParserError

from agent.tools.registry import ToolError
from agent.tools.web.settings import SearchSettings

log = logging.getLogger(__name__)

MAX_SNIPPET_CHARS = 300
"""A snippet is a hint of what the page says; the model fetches the page to read it."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One hit: what the page is called, where it is, and a short excerpt."""

    title: str
    url: str
    snippet: str


async def search(settings: SearchSettings, query: str, count: int) -> list[SearchResult]:
    """Ask the configured provider; failures are :class:`ToolError` texts (never the key)."""
    try:
        async with asyncio.timeout(settings.timeout_seconds):
            if settings.provider == "brave":
                return await _brave(settings, query, count)
            return await _searxng(settings, query, count)
    except TimeoutError:
        seconds = settings.timeout_seconds
        raise ToolError(f"the search provider did not answer within {seconds:g} s") from None
    except aiohttp.ClientResponseError as exc:
        raise ToolError(f"the search provider answered HTTP {exc.status}") from None
    except (aiohttp.ClientError, ValueError) as exc:
        log.debug("web_search failed: %s", type(exc).__name__)
        raise ToolError(f"the search provider failed ({type(exc).__name__})") from None


async def _get_json(url: str, params: dict[str, str], headers: dict[str, str]) -> Any:
    async with (
        aiohttp.ClientSession(trust_env=False) as session,
        session.get(url, params=params, headers=headers, raise_for_status=True) as response,
    ):
        return await response.json(content_type=None)


async def _searxng(settings: SearchSettings, query: str, count: int) -> list[SearchResult]:
    """SearXNG's ``GET /search?q=...&format=json`` (the JSON format must be enabled in the
    instance's ``search.formats``)."""
    url = settings.base_url.rstrip("/") + "/search"
    body = await _get_json(url, {"q": query, "format": "json"}, {"Accept": "application/json"})
    hits = body.get("results", []) if isinstance(body, dict) else []
    return [_result(h.get("title"), h.get("url"), h.get("content")) for h in hits[:count]]


async def _brave(settings: SearchSettings, query: str, count: int) -> list[SearchResult]:
    """Brave's ``GET /res/v1/web/search`` with the key in ``X-Subscription-Token``."""
    if not settings.api_key:
        raise ToolError(f"web search is not configured: {settings.api_key_env} is not set")
    headers = {"Accept": "application/json", "X-Subscription-Token": settings.api_key}
    body = await _get_json(settings.base_url, {"q": query, "count": str(count)}, headers)
    web = body.get("web", {}) if isinstance(body, dict) else {}
    hits = web.get("results", []) if isinstance(web, dict) else []
    return [_result(h.get("title"), h.get("url"), h.get("description")) for h in hits[:count]]


def _result(title: Any, url: Any, snippet: Any) -> SearchResult:
    return SearchResult(_plain(title), str(url or ""), _plain(snippet)[:MAX_SNIPPET_CHARS])


def _plain(fragment: Any) -> str:
    """Text without the markup some providers put in titles and snippets (``<strong>``)."""
    text = str(fragment or "").strip()
    if "<" not in text:
        return text
    try:
        return str(lxml.html.fragment_fromstring(text, create_parent="div").text_content())
    except ParserError:
        return text


def format_results(query: str, results: list[SearchResult]) -> str:
    """The hits as numbered lines the model can cite and fetch."""
    if not results:
        return f"No results for {query!r}."
    lines = [f"Results for {query!r}:"]
    for n, hit in enumerate(results, 1):
        lines.append(f"{n}. {hit.title}\n   {hit.url}\n   {hit.snippet}")
    return "\n".join(lines)
