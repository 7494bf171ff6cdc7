"""``web_search`` through the search emulator (sandbox/web_search_api.py) in both wire
formats: SearXNG's JSON API and the Brave Search API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from agent.tools import build_registry
from agent.tools.web import SearchSettings, WebToolSettings
from sandbox.web_search_api import SearchEmulator

BRAVE_KEY = "brave-secret-7f3a"


@pytest.fixture
async def provider() -> AsyncIterator[SearchEmulator]:
    server = SearchEmulator(brave_key=BRAVE_KEY)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def search_text(search: SearchSettings, args: dict[str, object]) -> str:
    registry = build_registry(["web_search"], web=WebToolSettings(search=search))
    return await registry.call("web_search", args)


async def test_searxng_results_come_back_as_title_url_and_snippet(
    provider: SearchEmulator,
) -> None:
    searxng = SearchSettings(provider="searxng", base_url=provider.base_url)
    text = await search_text(searxng, {"query": "tide tables", "count": 2})
    assert text == (
        "Results for 'tide tables':\n"
        "1. tide tables - result 1\n"
        "   https://example.org/tide-tables/1\n"
        "   Everything about tide tables, part 1.\n"
        "2. tide tables - result 2\n"
        "   https://example.org/tide-tables/2\n"
        "   Everything about tide tables, part 2."
    )
    assert provider.requests == [{"q": "tide tables", "format": "json"}]


async def test_brave_results_come_back_without_markup_and_the_key_is_never_logged(
    provider: SearchEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    brave = SearchSettings(
        provider="brave", base_url=provider.brave_url, api_key=BRAVE_KEY, api_key_env="BRAVE_KEY"
    )
    with caplog.at_level(logging.DEBUG):
        text = await search_text(brave, {"query": "tide tables"})
    assert "1. tide tables - result 1\n   https://example.org/tide-tables/1\n" in text
    assert "   Everything about tide tables, part 3." in text
    assert "<strong>" not in text
    assert provider.requests == [{"q": "tide tables", "count": "5"}]
    assert BRAVE_KEY not in caplog.text
    assert BRAVE_KEY not in repr(brave)


async def test_a_wrong_brave_key_is_an_error_that_does_not_show_the_key(
    provider: SearchEmulator,
) -> None:
    brave = SearchSettings(
        provider="brave", base_url=provider.brave_url, api_key="wrong", api_key_env="BRAVE_KEY"
    )
    assert await search_text(brave, {"query": "q"}) == (
        "Error: the search provider answered HTTP 401"
    )


async def test_brave_without_its_key_names_the_variable_to_set() -> None:
    brave = SearchSettings(provider="brave", base_url="http://127.0.0.1:9", api_key_env="BRAVE_KEY")
    assert await search_text(brave, {"query": "q"}) == (
        "Error: web search is not configured: BRAVE_KEY is not set"
    )


async def test_without_a_provider_the_tool_says_search_is_not_configured() -> None:
    registry = build_registry(["web_search"])
    assert await registry.call("web_search", {"query": "q"}) == (
        "Error: web search is not configured (web.search.provider)"
    )
