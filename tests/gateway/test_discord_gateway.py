"""The gateway answers Discord DMs, mentions and threads through the real discord.py client."""

from __future__ import annotations

import pytest

from gateway.platforms.discord.adapter import INTENT_HELP, DiscordStartError
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from tests.gateway.conftest import GENERAL_ID, GUILD_ID, THREAD_ID, GatewayFactory, all_quiet

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

DM_ID = 700000000000000030
ALICE_ID = 1001


async def test_direct_message_gets_the_model_reply(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator
) -> None:
    async with run_gateway(discord=discord_emulator):
        discord_emulator.push_message(DM_ID, "hello from a DM", author_id=ALICE_ID)
        sent = await discord_emulator.wait_for_sent(DM_ID, 1)
    assert sent[0]["content"].startswith("Noted: hello from a DM")
    assert DM_ID in discord_emulator.typing_channels


async def test_guild_channel_message_is_answered_only_when_the_bot_is_mentioned(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        discord_emulator.push_message(GENERAL_ID, "just chatting", guild_id=GUILD_ID)
        discord_emulator.push_message(GENERAL_ID, "help me", guild_id=GUILD_ID, mention_bot=True)
        sent = await discord_emulator.wait_for_sent(GENERAL_ID, 1)
        await all_quiet(gateway)
    assert len(discord_emulator.sent_messages(GENERAL_ID)) == 1
    assert sent[0]["content"].startswith("Noted: help me")
    assert [r.last_user_text for r in anthropic.requests] == ["help me"]


async def test_thread_message_is_answered_in_the_thread_with_its_own_session(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        discord_emulator.push_message(
            THREAD_ID, "in the thread", guild_id=GUILD_ID, mention_bot=True
        )
        sent = await discord_emulator.wait_for_sent(THREAD_ID, 1)
        sessions = await gateway.app.repo.list_sessions()
    assert sent[0]["content"].startswith("Noted: in the thread")
    assert [s.key for s in sessions] == [f"discord:thread:{THREAD_ID}"]


async def test_long_reply_is_split_at_two_thousand_characters(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    anthropic.reply_tokens = 1200
    async with run_gateway(discord=discord_emulator) as gateway:
        discord_emulator.push_message(DM_ID, "tell me a lot", author_id=ALICE_ID)
        await discord_emulator.wait_for_sent(DM_ID, 2)
        await all_quiet(gateway)
    parts = [m["content"] for m in discord_emulator.sent_messages(DM_ID)]
    assert all(len(part) <= 2000 for part in parts)
    assert " ".join(parts).startswith("Noted: tell me a lot")


async def test_repeated_message_create_is_not_answered_twice(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        message = discord_emulator.push_message(DM_ID, "only once", author_id=ALICE_ID)
        await discord_emulator.wait_for_sent(DM_ID, 1)
        discord_emulator.redispatch(message["id"])
        discord_emulator.push_message(DM_ID, "then this", author_id=ALICE_ID)
        await discord_emulator.wait_for_sent(DM_ID, 2)
        await all_quiet(gateway)
    assert len(discord_emulator.sent_messages(DM_ID)) == 2
    assert [r.last_user_text for r in anthropic.requests] == ["only once", "then this"]


async def test_resume_after_a_disconnect_answers_missed_messages_once(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        discord_emulator.push_message(DM_ID, "before the drop", author_id=ALICE_ID)
        await discord_emulator.wait_for_sent(DM_ID, 1)
        await discord_emulator.disconnect_clients(allow_resume=True)
        discord_emulator.push_message(DM_ID, "while away", author_id=ALICE_ID)
        await discord_emulator.wait_for_sent(DM_ID, 2)
        await all_quiet(gateway)
    assert len(discord_emulator.sent_messages(DM_ID)) == 2
    assert [r.last_user_text for r in anthropic.requests] == ["before the drop", "while away"]


async def test_missing_message_content_intent_stops_start_with_a_clear_message(
    run_gateway: GatewayFactory, anthropic: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    import discord

    from tests.gateway.conftest import DISCORD_TOKEN_ENV

    emulator = DiscordEmulator(message_content_intent=False)
    await emulator.start()
    monkeypatch.setenv(DISCORD_TOKEN_ENV, emulator.token)
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    gateway_class = discord.gateway.DiscordWebSocket
    monkeypatch.setattr(gateway_class, "DEFAULT_GATEWAY", gateway_class.DEFAULT_GATEWAY)
    try:
        with pytest.raises(DiscordStartError, match="Message Content intent"):
            async with run_gateway(discord=emulator):
                pass
    finally:
        await emulator.stop()
    assert "Developer Portal" in INTENT_HELP
