"""``web_fetch`` through the real daemon path: Telegram emulator -> gateway -> agent loop ->
Anthropic emulator (which scripts the tool call) -> the local page server, and the page's
text back in the next model request."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config.schema import parse_config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.web_pages import ARTICLE_TEXT, BOILERPLATE, WebPagesEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound


@pytest.fixture
async def pages() -> AsyncIterator[WebPagesEmulator]:
    server = WebPagesEmulator()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def tool_results(request_body: dict[str, Any]) -> list[str]:
    """The text of every tool_result block in one model request."""
    texts = []
    for message in request_body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                parts = inner if isinstance(inner, list) else [{"text": inner or ""}]
                texts.append("".join(p.get("text", "") for p in parts))
    return texts


async def run_turn(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    web: dict[str, Any],
    text: str,
) -> None:
    data = gateway_config(tmp_path, anthropic, telegram=telegram).model_dump(mode="json")
    data["agent"]["tools"] = ["web_fetch"]
    data["web"] = web
    async with open_app(parse_config(data)) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            update = telegram.push_message(ALICE, text)
            await settled_inbound(gateway, "telegram", message_key(update))
        finally:
            await gateway.stop(grace_seconds=2.0)


async def test_a_fetched_article_reaches_the_next_model_request_and_not_the_log(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    pages: WebPagesEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    call = f'[[tool:web_fetch {{"url": "{pages.url("/article")}"}}]] what is this page about?'
    with caplog.at_level(logging.INFO):
        await run_turn(tmp_path, anthropic, telegram, {"allow_private_addresses": True}, call)
    assert "web_fetch" in [t["name"] for t in anthropic.requests[0].body["tools"]]
    [result] = tool_results(anthropic.requests[-1].body)
    assert ARTICLE_TEXT in " ".join(result.split())
    assert BOILERPLATE not in result
    assert pages.requests == ["/article"]
    # The page server's own access log (aiohttp.access) is the emulator's, not ours.
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name != "aiohttp.access")
    assert "Skerry" not in ours and pages.base_url not in ours


async def test_by_default_the_model_is_told_a_loopback_page_is_refused(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    pages: WebPagesEmulator,
) -> None:
    call = f'[[tool:web_fetch {{"url": "{pages.url("/article")}"}}]] read it'
    await run_turn(tmp_path, anthropic, telegram, {}, call)
    [result] = tool_results(anthropic.requests[-1].body)
    assert result.startswith("Error: refused to fetch from 127.0.0.1")
    assert pages.requests == []
