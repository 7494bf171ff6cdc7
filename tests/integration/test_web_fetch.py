"""``web_fetch`` against the local page server (sandbox/web_pages.py).

The server listens on 127.0.0.1, which the default rule refuses: the extraction, redirect and
cap paths run with private addresses allowed; the refusal paths run with the default rule,
or with a rule that lets exactly 127.0.0.1 stand for a public host, so a redirect from it into
another private address is seen refused on the hop (never connected to)."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator

import pytest

from agent.tools import build_registry
from agent.tools.registry import ToolError
from agent.tools.web import WebToolSettings
from agent.tools.web.addresses import IPAddress, is_public_address
from agent.tools.web.extract import readable_text
from agent.tools.web.fetch import fetch
from sandbox.web_pages import ARTICLE_TEXT, BOILERPLATE, PDF_TEXT, WebPagesEmulator

ALLOW_PRIVATE = WebToolSettings(allow_private_addresses=True)
EMULATOR_HOST = ipaddress.ip_address("127.0.0.1")


def emulator_counts_as_public(address: IPAddress) -> bool:
    """The default rule, except that the emulator's own address passes as a public host."""
    return address == EMULATOR_HOST or is_public_address(address)


@pytest.fixture
async def pages() -> AsyncIterator[WebPagesEmulator]:
    server = WebPagesEmulator()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def fetch_text(url: str, settings: WebToolSettings = ALLOW_PRIVATE) -> str:
    """What the model gets from ``web_fetch(url)``, through the registry."""
    registry = build_registry(["web_fetch"], web=settings)
    return await registry.call("web_fetch", {"url": url})


async def test_an_article_comes_back_as_its_text_without_the_boilerplate(
    pages: WebPagesEmulator,
) -> None:
    text = await fetch_text(pages.url("/article"))
    assert ARTICLE_TEXT in " ".join(text.split())
    assert "Title: Skerry Point notebooks" in text
    assert BOILERPLATE not in text
    assert "Copyright" not in text


async def test_plain_text_comes_back_as_it_is(pages: WebPagesEmulator) -> None:
    assert (await fetch_text(pages.url("/plain"))).endswith(ARTICLE_TEXT)


async def test_a_pdf_comes_back_as_its_text(pages: WebPagesEmulator) -> None:
    text = await fetch_text(pages.url("/report.pdf"))
    assert "[page 1]" in text
    assert PDF_TEXT in text


async def test_a_redirect_chain_within_the_limit_is_followed(pages: WebPagesEmulator) -> None:
    text = await fetch_text(pages.url("/redirect/3"))
    assert ARTICLE_TEXT in " ".join(text.split())
    assert f"URL: {pages.url('/article')}" in text


async def test_more_redirects_than_the_limit_are_an_error(pages: WebPagesEmulator) -> None:
    text = await fetch_text(pages.url("/redirect/6"))
    assert text == "Error: more than 5 redirects"
    assert pages.requests == [f"/redirect/{n}" for n in range(6, 0, -1)]


async def test_a_huge_page_is_cut_at_the_byte_cap(pages: WebPagesEmulator) -> None:
    settings = WebToolSettings(allow_private_addresses=True, fetch_max_bytes=100_000)
    page = await fetch(pages.url("/huge"), settings)
    assert page.truncated
    assert len(page.body) == 100_000
    assert "(cut at 100,000 bytes: the page is larger)" in readable_text(page)


async def test_a_slow_page_is_an_error_after_the_timeout(pages: WebPagesEmulator) -> None:
    settings = WebToolSettings(allow_private_addresses=True, fetch_timeout_seconds=0.3)
    text = await fetch_text(pages.url("/slow"), settings)
    assert text == "Error: the page did not load within 0.3 s"


async def test_loopback_is_refused_by_default_by_address_and_by_name(
    pages: WebPagesEmulator,
) -> None:
    port = pages.base_url.rsplit(":", 1)[1]
    by_address = await fetch_text(pages.url("/article"), WebToolSettings())
    by_name = await fetch_text(f"http://localhost:{port}/article", WebToolSettings())
    assert by_address.startswith("Error: refused to fetch from 127.0.0.1")
    assert by_name.startswith("Error: refused to fetch from localhost")
    assert pages.requests == [], "nothing reached the server"


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.2/",
        "http://10.0.0.1/admin",
        "http://169.254.169.254/latest/",
        "http://[::1]/",
    ],
)
async def test_a_redirect_into_a_private_address_is_refused_on_the_hop(
    pages: WebPagesEmulator, target: str
) -> None:
    host = target.split("/")[2].strip("[]")
    with pytest.raises(ToolError, match=f"refused to fetch from {host}"):
        await fetch(
            pages.url(f"/redirect-to?url={target}"), WebToolSettings(), emulator_counts_as_public
        )
    assert len(pages.requests) == 1, "the first (allowed) host was asked"


def test_only_public_unicast_addresses_pass_the_default_rule() -> None:
    refused = [
        "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "224.0.0.1", "239.255.255.250", "0.0.0.0", "240.0.0.1", "::1", "fe80::1", "fc00::1",
        "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    ]  # fmt: skip
    assert not any(is_public_address(ipaddress.ip_address(a)) for a in refused)
    assert is_public_address(ipaddress.ip_address("93.184.216.34"))
    assert is_public_address(ipaddress.ip_address("2606:4700::1111"))


async def test_only_http_urls_are_fetched() -> None:
    assert (await fetch_text("file:///etc/passwd")).startswith("Error: not an http(s) URL")
