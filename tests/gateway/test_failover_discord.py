"""Discord with failover: the leader's gateway connection dies with it (kill -9); the standby
that takes over connects, reads back what was posted while nobody was connected, and answers
every message once."""

from __future__ import annotations

from pathlib import Path

from bench.failover_cluster import read_logs, running_cluster
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import GENERAL_ID

DISCORD_TOKEN_ENV = "HERMES_FAILOVER_DISCORD_TOKEN"


async def test_a_standby_taking_over_after_a_kill_answers_what_was_posted_meanwhile_once(
    tmp_path: Path,
    pg_url: str,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    discord_emulator: DiscordEmulator,
) -> None:
    discord = {
        "discord": {
            "enabled": True,
            "token_env": DISCORD_TOKEN_ENV,
            "api_base_url": discord_emulator.api_base_url,
            "gateway_url": discord_emulator.gateway_url,
            "allow_all": True,
            "typing_delay": 0,
        }
    }
    async with running_cluster(
        tmp_path,
        pg_url,
        telegram,
        anthropic,
        size=2,
        other_platforms=discord,
        env={DISCORD_TOKEN_ENV: discord_emulator.token},
    ) as cluster:
        leader, lease = await cluster.wait_serving()
        # Serving Telegram says nothing of Discord: Discord drops what is posted before the
        # leader has identified.
        await discord_emulator.wait_for_identify(1, timeout=30)
        channel = GENERAL_ID
        discord_emulator.push_message(channel, "before the crash", mention_bot=True)
        await discord_emulator.wait_for_sent(channel, 1, timeout=30)
        await cluster.kill(leader)
        # Posted while no gateway is connected: only the channel's history has it.
        discord_emulator.push_message(
            channel, "while nobody leads", mention_bot=True, deliver=False
        )
        new_leader, _ = await cluster.wait_serving(after_epoch=lease.epoch)
        await discord_emulator.wait_for_sent(channel, 2, timeout=60)
        await discord_emulator.wait_for_identify(2, timeout=30)
        discord_emulator.push_message(channel, "after the takeover", mention_bot=True)
        await discord_emulator.wait_for_sent(channel, 3, timeout=30)
        assert await cluster.stop(new_leader) == 0
    texts = [m["content"] for m in discord_emulator.sent_messages(channel)]
    assert len(texts) == 3, (texts, read_logs(cluster))
    assert texts[0].startswith("Noted: before the crash")
    assert texts[1].startswith("Noted: while nobody leads")
    assert texts[2].startswith("Noted: after the takeover")
