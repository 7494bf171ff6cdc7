"""After a restart the gateway answers Discord messages sent while it was down, exactly once.

Discord does not redeliver MESSAGE_CREATE after a fresh IDENTIFY, so the adapter reads each known
channel's history after the newest recorded message. The real discord.py client and the real
Gateway run against the Discord emulator; messages "sent while down" are posted with
``deliver=False``: they are only in the channel's history.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest

from gateway.runtime.gateway import MESSAGE_SEPARATOR, Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from tests.gateway.conftest import GENERAL_ID, GUILD_ID, GatewayFactory, settled_inbound

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

DM_ID = 700000000000000030
BOB_DM_ID = 700000000000000040
ALICE_ID = 1001
BOB_ID = 1002
CATCH_UP_LOGGER = "gateway.platforms.discord.adapter"
CAUGHT_UP_TEXT = "caught up on"
WAIT_S = 10.0


async def caught_up(caplog: pytest.LogCaptureFixture) -> str:
    """The adapter's catch-up summary line, once its catch-up has finished."""
    async with asyncio.timeout(WAIT_S):
        while True:
            for record in caplog.records:
                if record.name == CATCH_UP_LOGGER and CAUGHT_UP_TEXT in record.getMessage():
                    return record.getMessage()
            await asyncio.sleep(0.02)


async def converse(
    gateway: Gateway,
    emulator: DiscordEmulator,
    channel_id: int,
    content: str,
    *,
    author_id: int = ALICE_ID,
    author_name: str = "alice",
    guild_id: int | None = None,
) -> None:
    """One live message in a channel, answered and settled (the daemon's first run)."""
    message = emulator.push_message(
        channel_id,
        content,
        author_id=author_id,
        author_name=author_name,
        guild_id=guild_id,
        mention_bot=guild_id is not None,
    )
    await settled_inbound(gateway, "discord", message["id"])


def model_saw(anthropic: AnthropicEmulator) -> list[str]:
    return [request.last_user_text for request in anthropic.requests]


@pytest.fixture(autouse=True)
def _log_catch_up(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)


async def test_dm_messages_sent_while_down_are_answered_once_in_order_after_restart(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        await converse(gateway, discord_emulator, DM_ID, "hello")
    missed = [
        discord_emulator.push_message(DM_ID, text, author_id=ALICE_ID, deliver=False)
        for text in ("first while away", "second while away")
    ]
    caplog.clear()  # only the restart's log lines count
    async with run_gateway(discord=discord_emulator) as gateway:
        summary = await caught_up(caplog)
        records = [await settled_inbound(gateway, "discord", m["id"]) for m in missed]
        (session,) = await gateway.app.repo.list_sessions()
        stored = await gateway.app.repo.all_messages(session.id)
    # The two may share one turn (merged) or take one each; either way once each, in order.
    assert MESSAGE_SEPARATOR.join(model_saw(anthropic)) == MESSAGE_SEPARATOR.join(
        ["hello", "first while away", "second while away"]
    )
    user_texts = [m.content for m in stored if m.role == "user"]
    assert MESSAGE_SEPARATOR.join(user_texts[1:]) == "first while away\n\nsecond while away"
    assert [r.status for r in records] == ["done", "done"]
    assert records[-1].reply_platform_ids
    assert len(discord_emulator.sent_messages(DM_ID)) == len(anthropic.requests)
    assert "caught up on 2 message(s)" in summary


async def test_guild_channel_catch_up_answers_only_the_mention_when_mentions_are_required(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = {"require_mention": True}
    async with run_gateway(discord=discord_emulator, discord_settings=settings) as gateway:
        await converse(gateway, discord_emulator, GENERAL_ID, "hi bot", guild_id=GUILD_ID)
    chatter = discord_emulator.push_message(
        GENERAL_ID, "just chatting", guild_id=GUILD_ID, deliver=False
    )
    mention = discord_emulator.push_message(
        GENERAL_ID, "did you miss me", guild_id=GUILD_ID, mention_bot=True, deliver=False
    )
    caplog.clear()  # only the restart's log lines count
    async with run_gateway(discord=discord_emulator, discord_settings=settings) as gateway:
        await caught_up(caplog)
        await settled_inbound(gateway, "discord", mention["id"])
        assert await gateway.app.repo.get_inbound("discord", chatter["id"]) is None
    assert model_saw(anthropic) == ["hi bot", "did you miss me"]
    assert len(discord_emulator.sent_messages(GENERAL_ID)) == 2


async def test_more_missed_messages_than_the_cap_answers_only_the_newest_and_warns(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = {"catch_up_messages": 2}
    async with run_gateway(discord=discord_emulator, discord_settings=settings) as gateway:
        await converse(gateway, discord_emulator, DM_ID, "hello")
    missed = [
        discord_emulator.push_message(DM_ID, f"missed {n}", author_id=ALICE_ID, deliver=False)
        for n in range(1, 6)
    ]
    caplog.clear()  # only the restart's log lines count
    async with run_gateway(discord=discord_emulator, discord_settings=settings) as gateway:
        await caught_up(caplog)
        for message in missed[-2:]:
            await settled_inbound(gateway, "discord", message["id"])
        unanswered = [await gateway.app.repo.get_inbound("discord", m["id"]) for m in missed[:3]]
    assert unanswered == [None, None, None]
    assert MESSAGE_SEPARATOR.join(model_saw(anthropic)) == "hello\n\nmissed 4\n\nmissed 5"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(DM_ID) in w and "3 older message(s)" in w for w in warnings), warnings


async def test_a_message_both_delivered_live_and_found_by_catch_up_is_answered_once(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        await converse(gateway, discord_emulator, DM_ID, "hello")
    racing = discord_emulator.push_message(
        DM_ID, "sent as you connect", author_id=ALICE_ID, deliver=False
    )
    discord_emulator.redispatch_after_identify(racing["id"])
    caplog.clear()  # only the restart's log lines count
    async with run_gateway(discord=discord_emulator) as gateway:
        await caught_up(caplog)
        await settled_inbound(gateway, "discord", racing["id"])
    assert model_saw(anthropic) == ["hello", "sent as you connect"]
    assert len(discord_emulator.sent_messages(DM_ID)) == 2
    # Both paths really delivered it: the runner dropped the second copy.
    assert any(f"duplicate {racing['id']} dropped" in r.getMessage() for r in caplog.records)


async def test_catch_up_disabled_answers_nothing_from_the_downtime(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    settings = {"catch_up_messages": 0}
    async with run_gateway(discord=discord_emulator, discord_settings=settings) as gateway:
        await converse(gateway, discord_emulator, DM_ID, "hello")
    away = discord_emulator.push_message(DM_ID, "while away", author_id=ALICE_ID, deliver=False)
    async with run_gateway(discord=discord_emulator, discord_settings=settings) as gateway:
        await converse(gateway, discord_emulator, DM_ID, "after")
        assert await gateway.app.repo.get_inbound("discord", away["id"]) is None
    assert model_saw(anthropic) == ["hello", "after"]
    assert discord_emulator.rest.history_requests == []


async def test_an_unreadable_or_deleted_channel_is_skipped_and_the_others_are_caught_up(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        await converse(gateway, discord_emulator, GENERAL_ID, "hi", guild_id=GUILD_ID)
        await converse(
            gateway, discord_emulator, BOB_DM_ID, "hey", author_id=BOB_ID, author_name="bob"
        )
        await converse(gateway, discord_emulator, DM_ID, "hello")
    discord_emulator.forbid_channel(GENERAL_ID)  # 403 Missing Access
    discord_emulator.delete_channel(BOB_DM_ID)  # 404 Unknown Channel
    missed = discord_emulator.push_message(DM_ID, "still there?", author_id=ALICE_ID, deliver=False)
    caplog.clear()  # only the restart's log lines count
    async with run_gateway(discord=discord_emulator) as gateway:
        summary = await caught_up(caplog)
        await settled_inbound(gateway, "discord", missed["id"])
    assert model_saw(anthropic)[-1] == "still there?"
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert any(str(GENERAL_ID) in line and "403" in line for line in skipped), skipped
    assert any(str(BOB_DM_ID) in line and "404" in line for line in skipped), skipped
    assert "caught up on 1 message(s)" in summary


# -- the emulator's history, as catch-up reads it --------------------------------------------


async def test_emulator_history_pages_like_discord_for_discord_py(
    discord_emulator: DiscordEmulator,
) -> None:
    import discord

    ids = [
        int(discord_emulator.push_message(DM_ID, f"m{n}", author_id=ALICE_ID, deliver=False)["id"])
        for n in range(7)
    ]
    client = discord.Client(intents=discord.Intents.default())
    discord.http.Route.BASE = discord_emulator.api_base_url  # restored by the fixture
    await client.login(discord_emulator.token)
    try:
        channel = client.get_partial_messageable(DM_ID)

        async def read(**options: object) -> list[int]:
            return [m.id async for m in channel.history(**options)]  # type: ignore[arg-type]

        after = discord.Object(id=ids[1])
        assert await read(limit=3, after=after) == ids[2:5]  # oldest first from `after`
        assert await read(limit=None, after=after) == ids[2:]
        assert await read(limit=3, after=after, oldest_first=False) == ids[:1:-1][:3]
        assert await read(limit=2, before=discord.Object(id=ids[5])) == [ids[4], ids[3]]
        assert await read(limit=5, around=discord.Object(id=ids[3])) == ids[5:0:-1]
    finally:
        await client.close()


async def test_emulator_history_validates_limit_and_anchors_and_answers_newest_first(
    discord_emulator: DiscordEmulator,
) -> None:
    ids = [
        discord_emulator.push_message(DM_ID, f"m{n}", author_id=ALICE_ID, deliver=False)["id"]
        for n in range(60)
    ]
    url = f"{discord_emulator.api_base_url}/channels/{DM_ID}/messages"
    headers = {"Authorization": f"Bot {discord_emulator.token}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(url) as response:
            default_page = [m["id"] for m in await response.json()]
        async with http.get(url, params={"after": ids[0], "limit": "2"}) as response:
            after_page = [m["id"] for m in await response.json()]
        statuses = []
        for params in ({"limit": "0"}, {"limit": "101"}, {"before": ids[9], "after": ids[0]}):
            async with http.get(url, params=params) as response:
                statuses.append(response.status)
        async with http.get(f"{discord_emulator.api_base_url}/channels/1/messages") as response:
            statuses.append(response.status)
    assert default_page == ids[:-51:-1]  # the newest 50, newest first
    assert after_page == [ids[2], ids[1]]  # just after the anchor, still newest first
    assert statuses == [400, 400, 400, 404]
