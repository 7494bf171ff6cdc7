"""A local search provider speaking two wire formats: SearXNG's JSON API
(``GET /search?q=...&format=json``) and the Brave Search API (``GET /res/v1/web/search`` with
``X-Subscription-Token``). Results are made from the query, so a test knows what to expect.

Like a real SearXNG without the JSON format enabled, ``format`` other than ``json`` is a 403;
like Brave, a missing or wrong token is a 401. Listens on 127.0.0.1 only; every request's
query parameters are kept in :attr:`SearchEmulator.requests` (the token is not).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

RESULT_COUNT = 3


def hits(query: str) -> list[dict[str, str]]:
    """The results for ``query``: ``RESULT_COUNT`` pages titled after it."""
    slug = "-".join(query.lower().split())
    return [
        {
            "title": f"{query} - result {n}",
            "url": f"https://example.org/{slug}/{n}",
            "snippet": f"Everything about {query}, part {n}.",
        }
        for n in range(1, RESULT_COUNT + 1)
    ]


class SearchEmulator:
    """SearXNG at :attr:`base_url` (``/search``) and Brave at :attr:`brave_url`."""

    def __init__(self, brave_key: str = "brave-test-key") -> None:
        self.brave_key = brave_key
        self.requests: list[dict[str, str]] = []
        self.base_url = ""
        self.brave_url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Start on a free port; returns the SearXNG base URL."""
        app = web.Application()
        app.router.add_get("/search", self._searxng)
        app.router.add_get("/res/v1/web/search", self._brave)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        self.brave_url = self.base_url + "/res/v1/web/search"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _searxng(self, request: web.Request) -> web.Response:
        self.requests.append(dict(request.query))
        if request.query.get("format") != "json":
            return web.Response(status=403, text="403 Forbidden")
        query = request.query.get("q", "")
        results = [
            {"title": h["title"], "url": h["url"], "content": h["snippet"], "engine": "emulator"}
            for h in hits(query)
        ]
        body: dict[str, Any] = {"query": query, "number_of_results": len(results)}
        body["results"] = results
        return web.json_response(body)

    async def _brave(self, request: web.Request) -> web.Response:
        self.requests.append(dict(request.query))
        if request.headers.get("X-Subscription-Token") != self.brave_key:
            error = {
                "type": "ErrorResponse",
                "error": {"status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID"},
            }
            return web.json_response(error, status=401)
        query = request.query.get("q", "")
        count = int(request.query.get("count", "20"))
        results = [
            {
                "title": h["title"],
                "url": h["url"],
                "description": h["snippet"].replace(query, f"<strong>{query}</strong>"),
            }
            for h in hits(query)[:count]
        ]
        return web.json_response({"type": "search", "web": {"type": "search", "results": results}})
