"""The ``web_fetch`` and ``web_search`` tools as the registry offers them."""

from __future__ import annotations

import asyncio
from typing import Any

from agent.tools.registry import Tool, ToolError
from agent.tools.web.fetch import fetch
from agent.tools.web.search import format_results, search
from agent.tools.web.settings import DEFAULT_SEARCH_RESULTS, WebToolSettings

WEB_TOOL_NAMES = ("web_fetch", "web_search")
MAX_SEARCH_RESULTS = 10


def web_tools(settings: WebToolSettings) -> dict[str, Tool]:
    """``web_fetch`` and ``web_search`` bound to ``settings``."""

    async def web_fetch(args: dict[str, Any]) -> str:
        url = str(args.get("url", "")).strip()
        if not url:
            raise ToolError("missing 'url'")
        page = await fetch(url, settings)
        # trafilatura takes a third of a second to import: loaded at the first fetch, not at
        # every start of the daemon or the CLI.
        from agent.tools.web.extract import readable_text

        # Extraction parses a document of up to the byte cap: off the event loop.
        return await asyncio.to_thread(readable_text, page)

    async def web_search(args: dict[str, Any]) -> str:
        query = str(args.get("query", "")).strip()
        if not query:
            raise ToolError("missing 'query'")
        if settings.search is None:
            raise ToolError("web search is not configured (web.search.provider)")
        count = _count(args.get("count"))
        return format_results(query, await search(settings.search, query, count))

    return {
        "web_fetch": Tool(
            "web_fetch",
            "Fetch a web page (HTML, plain text or PDF) and return its readable text, "
            "without navigation and boilerplate.",
            {
                "type": "object",
                "properties": {"url": {"type": "string", "description": "http(s) URL"}},
                "required": ["url"],
            },
            web_fetch,
        ),
        "web_search": Tool(
            "web_search",
            "Search the web; returns titles, URLs and snippets (use web_fetch to read a page).",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "count": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS},
                },
                "required": ["query"],
            },
            web_search,
        ),
    }


def _count(value: Any) -> int:
    if value is None:
        return DEFAULT_SEARCH_RESULTS
    try:
        return max(1, min(MAX_SEARCH_RESULTS, int(value)))
    except (TypeError, ValueError):
        raise ToolError("'count' must be a number") from None
