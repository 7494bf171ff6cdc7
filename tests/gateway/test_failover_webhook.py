"""Telegram in webhook mode with failover: an update the load balancer hands to a standby is
kept in the store and acknowledged there, and the leader answers it, once."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp

from bench.failover_cluster import Member, read_logs, running_cluster
from gateway.platforms.telegram.webhook import SECRET_HEADER
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE

SECRET = "shared-webhook-secret"
SECRET_ENV = "HERMES_FAILOVER_WEBHOOK_SECRET"
UNREACHABLE = "http://127.0.0.1:9/telegram"
"""Where Telegram is told to POST: nowhere, so every update in the test reaches the gateways
only through the standby, as a load balancer may route it."""
STANDBY_LINE = re.compile(r"failover: standby webhook on (http://\S+) keeps updates")


async def standby_endpoint(member: Member, timeout: float = 60.0) -> str:  # noqa: ASYNC109
    """The webhook URL ``member`` serves while it stands by (from its log)."""
    async with asyncio.timeout(timeout):
        while True:
            found = STANDBY_LINE.search(member.log.read_text(errors="replace"))
            if found:
                return found.group(1)
            await asyncio.sleep(0.05)


async def post(url: str, update: dict[str, object], secret: str = SECRET) -> int:
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=update, headers={SECRET_HEADER: secret}) as response:
            return response.status


async def test_an_update_posted_to_a_standby_is_kept_and_answered_once_by_the_leader(
    tmp_path: Path, pg_url: str, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    webhook = {
        "mode": "webhook",
        "webhook_url": UNREACHABLE,
        "webhook_port": 0,
        "webhook_secret_env": SECRET_ENV,
    }
    async with running_cluster(
        tmp_path,
        pg_url,
        telegram,
        anthropic,
        size=2,
        telegram_settings=webhook,
        env={SECRET_ENV: SECRET},
    ) as cluster:
        leader, _ = await cluster.wait_serving()
        [standby] = [member for member in cluster.members if member is not leader]
        url = await standby_endpoint(standby)
        update = telegram.push_message(ALICE, "kept by the standby")
        assert await post(url, update, secret="wrong") == 403
        assert await post(url, update) == 200
        assert await post(url, update) == 200  # Telegram's retry: kept once
        await telegram.wait_for_sent(ALICE, 1, timeout=30)
        second = telegram.push_message(ALICE, "and another")
        assert await post(url, second) == 200
        await telegram.wait_for_sent(ALICE, 2, timeout=30)
        codes = [await cluster.stop(member) for member in (standby, leader)]
    logs = read_logs(cluster)
    assert codes == [0, 0], logs
    texts = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert len(texts) == 2, texts
    assert texts[0].startswith("Noted: kept by the standby")
    assert texts[1].startswith("Noted: and another")
    assert "took in 1 update(s) a standby received" in logs[leader.name]
    assert cluster.calls_by(standby, since=0.0) == []  # the standby never spoke to Telegram
