"""Fetching one URL for ``web_fetch``: redirects followed by hand (each hop's host checked),
the body read up to a byte cap, the whole fetch bounded in time."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import aiohttp

from agent.tools.registry import ToolError
from agent.tools.web.addresses import (
    AddressPolicy,
    PublicOnlyResolver,
    check_literal_host,
    is_public_address,
)
from agent.tools.web.settings import WebToolSettings

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CHUNK_BYTES = 64 * 1024
USER_AGENT = "HermesGateway-web_fetch/1.0"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.9,*/*;q=0.5"


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A page's raw body as fetched (at most the byte cap) and what the server said it is."""

    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool


def check_url(url: str) -> str:
    """The URL if it is an absolute http(s) URL with a host; else a :class:`ToolError`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"not an http(s) URL: {url!r}")
    return url


async def fetch(
    url: str, settings: WebToolSettings, allowed: AddressPolicy = is_public_address
) -> FetchedPage:
    """Fetch ``url``, following at most ``settings.max_redirects`` redirects, within
    ``settings.fetch_timeout_seconds`` in all; errors are :class:`ToolError` texts.

    Unless ``settings.allow_private_addresses``, every hop's host must pass ``allowed``
    (public addresses only; tests widen it to one loopback address to stand for a public
    host)."""
    try:
        async with asyncio.timeout(settings.fetch_timeout_seconds):
            return await _fetch(check_url(url), settings, allowed)
    except TimeoutError:
        raise ToolError(
            f"the page did not load within {settings.fetch_timeout_seconds:g} s"
        ) from None
    except aiohttp.ClientError as exc:
        log.debug("web_fetch failed: %s", exc)
        raise ToolError(f"could not fetch the page ({type(exc).__name__})") from None


def _session(settings: WebToolSettings, allowed: AddressPolicy) -> aiohttp.ClientSession:
    """A client that connects only to the addresses the resolver checked (unless private
    addresses are allowed); no proxy from the environment, no cookies kept."""
    resolver = None if settings.allow_private_addresses else PublicOnlyResolver(allowed)
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False, limit=4)
    return aiohttp.ClientSession(
        connector=connector,
        headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
    )


async def _fetch(url: str, settings: WebToolSettings, allowed: AddressPolicy) -> FetchedPage:
    async with _session(settings, allowed) as session:
        for _hop in range(settings.max_redirects + 1):
            if not settings.allow_private_addresses:
                # aiohttp connects to an IP literal without asking the resolver.
                check_literal_host(urlsplit(url).hostname or "", allowed)
            async with session.get(url, allow_redirects=False) as response:
                location = response.headers.get("Location")
                if response.status in REDIRECT_STATUSES and location:
                    url = check_url(urljoin(url, location))
                    continue
                return await _read(url, response, settings.fetch_max_bytes)
    raise ToolError(f"more than {settings.max_redirects} redirects")


async def _read(url: str, response: aiohttp.ClientResponse, max_bytes: int) -> FetchedPage:
    """The body up to ``max_bytes`` (the rest is never downloaded)."""
    if response.status >= 400:
        raise ToolError(f"the server answered HTTP {response.status}")
    chunks: list[bytes] = []
    size = 0
    truncated = False
    async for chunk in response.content.iter_chunked(CHUNK_BYTES):
        chunks.append(chunk)
        size += len(chunk)
        if size >= max_bytes:
            truncated = size > max_bytes or not response.content.at_eof()
            break
    body = b"".join(chunks)[:max_bytes]
    return FetchedPage(
        url=url,
        status=response.status,
        content_type=response.content_type,
        charset=response.charset,
        body=body,
        truncated=truncated,
    )
