"""A local web server for ``web_fetch``: an article wrapped in navigation and footer
boilerplate, plain text, a PDF, a redirect chain, redirects into private and loopback
addresses, a slow page and a huge page. Listens on 127.0.0.1 only.

Paths: ``/article``, ``/plain``, ``/report.pdf``, ``/redirect/{n}`` (``n`` hops, then the
article), ``/redirect-to?url=...`` (one hop to any URL), ``/slow`` (answers only when
:meth:`WebPagesEmulator.stop` is called), ``/huge`` (``HUGE_PAGE_BYTES`` of text, streamed).
Every request's path is kept in :attr:`WebPagesEmulator.requests`.
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.typedefs import Handler

ARTICLE_TEXT = (
    "The lighthouse keeper of Skerry Point logged every passing ship for forty years. "
    "Her notebooks, now digitised, show how coastal traffic changed after the harbour closed."
)
BOILERPLATE = "Subscribe to our newsletter for weekly deals"
HUGE_PAGE_BYTES = 5_000_000
_CHUNK = b"All work and no play makes a long page. " * 1600  # about 64 KB

ARTICLE_HTML = f"""<!doctype html>
<html><head><title>Skerry Point notebooks</title></head>
<body>
<header><nav><a href="/">Home</a> | <a href="/news">News</a> | <a href="/shop">Shop</a>
</nav></header>
<aside class="sidebar"><p>{BOILERPLATE}</p><ul><li>Trending: ten gadgets</li></ul></aside>
<main><article>
<h1>Skerry Point notebooks</h1>
<p>{ARTICLE_TEXT}</p>
<p>Archivists spent two winters scanning the pages, which record the name, flag and cargo
of each vessel, and the weather the keeper saw as it passed the point.</p>
<p>The collection opens to the public next spring, together with a map of every wreck
mentioned in the notebooks.</p>
</article></main>
<footer><p>{BOILERPLATE}</p><p>Copyright 2026 Example News. All rights reserved.</p></footer>
</body></html>
"""


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica (ASCII only), with a correct xref table."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


PDF_TEXT = "Quarterly tide report for Skerry Point"


class WebPagesEmulator:
    """Serves the test pages on 127.0.0.1; :attr:`base_url` has no trailing slash."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.base_url = ""
        self._runner: web.AppRunner | None = None
        self._release = asyncio.Event()

    async def start(self) -> str:
        """Start on a free port; returns the base URL (``http://127.0.0.1:PORT``)."""
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/article", self._article)
        app.router.add_get("/plain", self._plain)
        app.router.add_get("/report.pdf", self._pdf)
        app.router.add_get("/redirect/{hops}", self._redirect_chain)
        app.router.add_get("/redirect-to", self._redirect_to)
        app.router.add_get("/slow", self._slow)
        app.router.add_get("/huge", self._huge)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self.base_url

    async def stop(self) -> None:
        """Release the slow page and stop serving."""
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str) -> str:
        return self.base_url + path

    @web.middleware
    async def _record(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.requests.append(request.path_qs)
        return await handler(request)

    async def _article(self, request: web.Request) -> web.Response:
        return web.Response(text=ARTICLE_HTML, content_type="text/html", charset="utf-8")

    async def _plain(self, request: web.Request) -> web.Response:
        return web.Response(text=ARTICLE_TEXT, content_type="text/plain", charset="utf-8")

    async def _pdf(self, request: web.Request) -> web.Response:
        return web.Response(body=minimal_pdf(PDF_TEXT), content_type="application/pdf")

    async def _redirect_chain(self, request: web.Request) -> web.Response:
        hops = int(request.match_info["hops"])
        target = "/article" if hops <= 1 else f"/redirect/{hops - 1}"
        raise web.HTTPFound(target)

    async def _redirect_to(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["url"])

    async def _slow(self, request: web.Request) -> web.Response:
        await self._release.wait()
        return web.Response(text="finally", content_type="text/plain")

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        await response.prepare(request)
        sent = 0
        while sent < HUGE_PAGE_BYTES:
            await response.write(_CHUNK)
            sent += len(_CHUNK)
        await response.write_eof()
        return response
