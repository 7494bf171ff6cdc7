"""The Discord emulator, driven by the real discord.py client as the gateway will drive it."""

from __future__ import annotations

import asyncio
import io
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import aiohttp
import pytest
import yarl

from sandbox.discord_api import DiscordEmulator

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # discord.py imports audioop on 3.11
    import discord

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

GUILD_ID = 700000000000000001
GENERAL_ID = 700000000000000010
THREAD_ID = 700000000000000020
DM_ID = 700000000000000030
ALICE_ID = 1001
WAIT_S = 5.0
TRANSCRIPT_TIME = 1_700_000_000.25  # 2023-11-14, long before the real clock
GUILD_READY_TIMEOUT_S = 0.05

EmulatorFactory = Callable[..., Awaitable[DiscordEmulator]]


@pytest.fixture
async def make_emulator(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[EmulatorFactory]:
    """Starts emulators with one guild (#general and a thread) and points discord.py at them."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    started: list[DiscordEmulator] = []

    async def make(**options: object) -> DiscordEmulator:
        emulator = DiscordEmulator(**options)  # type: ignore[arg-type]
        emulator.add_guild(GUILD_ID, "hermes-lab", [(GENERAL_ID, "general")])
        emulator.add_thread(GUILD_ID, GENERAL_ID, THREAD_ID, "design-notes")
        await emulator.start()
        started.append(emulator)
        monkeypatch.setattr(discord.http.Route, "BASE", emulator.api_base_url)
        gateway_url = yarl.URL(emulator.gateway_url)
        monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", gateway_url)
        return emulator

    yield make
    for emulator in started:
        await emulator.stop()


class PromptClient(discord.Client):
    """discord.Client that re-IDENTIFYs at once; discord.py waits 5 s, Discord's identify pace."""

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        return None


class EchoBot:
    """A real discord.Client that answers every user message with "echo: <content>"."""

    def __init__(self, *, message_content: bool = True) -> None:
        intents = discord.Intents.default()
        intents.message_content = message_content
        self.client = PromptClient(intents=intents, guild_ready_timeout=GUILD_READY_TIMEOUT_S)
        self.received: list[discord.Message] = []
        self.own_echoes: list[discord.Message] = []
        self.ready_count = 0
        self.resumed_count = 0
        self._changed = asyncio.Event()
        self.client.event(self.on_ready)
        self.client.event(self.on_resumed)
        self.client.event(self.on_message)

    async def on_ready(self) -> None:
        self.ready_count += 1
        self._changed.set()

    async def on_resumed(self) -> None:
        self.resumed_count += 1
        self._changed.set()

    async def on_message(self, message: discord.Message) -> None:
        if message.author == self.client.user:
            self.own_echoes.append(message)
        else:
            self.received.append(message)
            await message.channel.send(f"echo: {message.content}")
        self._changed.set()

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait (bounded) until the condition over what the bot has seen holds."""
        async with asyncio.timeout(WAIT_S):
            while not condition():
                self._changed.clear()
                await self._changed.wait()

    def contents(self) -> list[str]:
        return [message.content for message in self.received]


@asynccontextmanager
async def running(bot: EchoBot, emulator: DiscordEmulator) -> AsyncIterator[EchoBot]:
    """Run the bot against the emulator until on_ready; close it cleanly afterwards."""
    task = asyncio.create_task(bot.client.start(emulator.token))
    try:
        ready = asyncio.create_task(bot.wait_until(lambda: bot.ready_count > 0))
        await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            ready.cancel()
            task.result()  # raise the client's failure
        await ready
        yield bot
    finally:
        await bot.client.close()
        await asyncio.wait_for(task, WAIT_S)


async def test_bot_logs_in_and_knows_the_guild_text_channel_and_thread_on_ready(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        channel = bot.client.get_channel(GENERAL_ID)
        thread = bot.client.get_channel(THREAD_ID)
        assert bot.client.user is not None and bot.client.user.id == emulator.bot_id
        assert isinstance(channel, discord.TextChannel)
        assert channel.guild.name == "hermes-lab" and channel.name == "general"
        assert isinstance(thread, discord.Thread) and thread.parent_id == GENERAL_ID
        assert channel.guild.me is not None
        assert channel.permissions_for(channel.guild.me).send_messages
        assert emulator.identify_count == 1


@pytest.mark.parametrize("zlib_stream", [True, False], ids=["zlib-stream", "plain-text"])
async def test_dm_message_is_answered_in_the_same_dm_channel(
    make_emulator: EmulatorFactory, zlib_stream: bool
) -> None:
    emulator = await make_emulator(zlib_stream=zlib_stream)
    async with running(EchoBot(), emulator) as bot:
        emulator.push_message(DM_ID, "hello there", author_id=ALICE_ID)
        sent = await emulator.wait_for_sent(DM_ID, 1)
        await bot.wait_until(lambda: len(bot.own_echoes) == 1)

    assert [message["content"] for message in sent] == ["echo: hello there"]
    assert isinstance(bot.received[0].channel, discord.DMChannel)
    assert bot.received[0].author.id == ALICE_ID
    # Discord echoes the bot's own message back over the gateway, and so does the emulator.
    assert bot.own_echoes[0].content == "echo: hello there"


async def test_a_pushed_message_can_carry_a_transcript_time_in_its_timestamp_and_id(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        first = emulator.push_message(DM_ID, "older", author_id=ALICE_ID, sent_at=TRANSCRIPT_TIME)
        second = emulator.push_message(
            DM_ID, "same second", author_id=ALICE_ID, sent_at=TRANSCRIPT_TIME
        )
        emulator.push_message(DM_ID, "live", author_id=ALICE_ID)
        await bot.wait_until(lambda: len(bot.received) == 3)

    transcript_time = datetime.fromtimestamp(TRANSCRIPT_TIME, UTC)
    older, same_second, live = bot.received
    assert older.created_at == same_second.created_at == transcript_time
    assert discord.utils.snowflake_time(older.id) == transcript_time
    assert first["id"] != second["id"]
    assert datetime.fromisoformat(first["timestamp"]) == transcript_time
    assert live.created_at > transcript_time


async def test_guild_mention_arrives_from_a_member_with_the_bot_among_mentions(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        emulator.push_message(GENERAL_ID, "status?", guild_id=GUILD_ID, mention_bot=True)
        sent = await emulator.wait_for_sent(GENERAL_ID, 1)
        message = bot.received[0]
        assert isinstance(message.author, discord.Member)
        assert message.guild is not None and message.guild.id == GUILD_ID
        assert bot.client.user in message.mentions
        assert isinstance(message.channel, discord.TextChannel)

    assert sent[0]["content"] == f"echo: <@{emulator.bot_id}> status?"


async def test_thread_message_reaches_the_bot_in_the_thread_and_the_answer_goes_there(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        emulator.push_message(THREAD_ID, "in the thread", guild_id=GUILD_ID)
        sent = await emulator.wait_for_sent(THREAD_ID, 1)
        channel = bot.received[0].channel
        assert isinstance(channel, discord.Thread) and channel.parent_id == GENERAL_ID

    assert sent[0]["content"] == "echo: in the thread"
    assert emulator.sent_messages(GENERAL_ID) == []


async def test_a_reply_carries_its_message_reference(make_emulator: EmulatorFactory) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        pushed = emulator.push_message(GENERAL_ID, "question", guild_id=GUILD_ID)
        await bot.wait_until(lambda: len(bot.received) == 1)
        reply = await bot.received[0].reply("answer")
        assert reply.reference is not None and reply.reference.message_id == int(pushed["id"])

    stored = emulator.sent_messages(GENERAL_ID)[-1]
    assert stored["message_reference"]["message_id"] == pushed["id"]


async def test_message_over_2000_characters_is_refused_and_2000_is_accepted(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        channel = bot.client.get_channel(GENERAL_ID)
        assert isinstance(channel, discord.TextChannel)
        with pytest.raises(discord.HTTPException) as refused:
            await channel.send("x" * 2001)
        await channel.send("y" * 2000)

    assert refused.value.status == 400 and refused.value.code == 50035
    assert [len(message["content"]) for message in emulator.sent_messages(GENERAL_ID)] == [2000]


async def test_typing_indicator_is_recorded_per_channel(make_emulator: EmulatorFactory) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        channel = bot.client.get_channel(GENERAL_ID)
        assert isinstance(channel, discord.TextChannel)
        async with channel.typing():
            pass

    assert emulator.typing_channels == [GENERAL_ID]


async def test_after_a_disconnect_the_client_resumes_and_gets_the_missed_event_once(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        await emulator.disconnect_clients()
        emulator.push_message(DM_ID, "sent while away")
        await bot.wait_until(lambda: bot.resumed_count == 1 and "sent while away" in bot.contents())
        emulator.push_message(DM_ID, "after the resume")
        await bot.wait_until(lambda: "after the resume" in bot.contents())

    assert bot.contents() == ["sent while away", "after the resume"]
    assert (emulator.identify_count, emulator.resume_count) == (1, 1)


async def test_an_invalidated_session_makes_the_client_identify_again(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        await emulator.disconnect_clients(allow_resume=False)
        await bot.wait_until(lambda: bot.ready_count == 2)
        emulator.push_message(DM_ID, "new session")
        await emulator.wait_for_sent(DM_ID, 1)

    assert (emulator.identify_count, emulator.resume_count) == (2, 0)
    assert bot.contents() == ["new session"]


async def test_redispatch_delivers_the_same_message_create_twice(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        pushed = emulator.push_message(DM_ID, "only once, please")
        await bot.wait_until(lambda: len(bot.received) == 1)
        emulator.redispatch(int(pushed["id"]))
        await bot.wait_until(lambda: len(bot.received) == 2)

    assert [message.id for message in bot.received] == [int(pushed["id"])] * 2


async def test_message_content_intent_not_enabled_fails_start_with_privileged_intents_required(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator(message_content_intent=False)
    bot = EchoBot()
    try:
        with pytest.raises(discord.PrivilegedIntentsRequired):
            await asyncio.wait_for(bot.client.start(emulator.token), WAIT_S)
    finally:
        await bot.client.close()
    assert emulator.identify_count == 0


async def test_without_the_content_intent_guild_text_is_blank_unless_the_bot_is_mentioned(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(message_content=False), emulator) as bot:
        emulator.push_message(GENERAL_ID, "not for you", guild_id=GUILD_ID)
        emulator.push_message(GENERAL_ID, "for you", guild_id=GUILD_ID, mention_bot=True)
        await bot.wait_until(lambda: len(bot.received) == 2)

    assert bot.contents() == ["", f"<@{emulator.bot_id}> for you"]


async def test_rest_answers_exact_json_with_rate_limit_headers_and_demands_the_bot_token(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bot {emulator.token}"}
        async with http.get(f"{emulator.api_base_url}/users/@me", headers=headers) as me:
            body = await me.json()
            assert me.headers["Content-Type"] == "application/json"
            assert {
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                "X-RateLimit-Reset-After",
                "X-RateLimit-Bucket",
            } <= set(me.headers)
        async with http.get(f"{emulator.api_base_url}/users/@me") as anonymous:
            assert anonymous.status == 401

    assert body["id"] == str(emulator.bot_id) and body["bot"] is True


async def test_requests_past_the_bucket_limit_get_429_with_retry_after(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator(rate_limit=1, rate_limit_window=60.0)
    url = f"{emulator.api_base_url}/channels/{GENERAL_ID}/typing"
    async with aiohttp.ClientSession(headers={"Authorization": f"Bot {emulator.token}"}) as http:
        async with http.post(url) as first:
            assert first.status == 204 and first.headers["X-RateLimit-Remaining"] == "0"
        async with http.post(url) as second:
            assert second.status == 429
            assert (await second.json())["retry_after"] > 0

    assert emulator.rate_limited_count == 1 and emulator.typing_channels == [GENERAL_ID]


async def test_bot_can_upload_a_file_edit_react_and_delete(make_emulator: EmulatorFactory) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        channel = bot.client.get_channel(GENERAL_ID)
        assert isinstance(channel, discord.TextChannel)
        upload = await channel.send("notes", file=discord.File(io.BytesIO(b"a,b\n"), "notes.csv"))
        draft = await channel.send("draft")
        await draft.edit(content="final")
        await draft.add_reaction("👀")
        await upload.delete()

    assert [a["filename"] for a in emulator.sent_messages(GENERAL_ID)[0]["attachments"]] == [
        "notes.csv"
    ]
    assert [edit["content"] for edit in emulator.edited_messages] == ["final"]
    assert emulator.reactions == [(GENERAL_ID, draft.id, "👀")]
    assert emulator.message(upload.id) is None


async def test_heartbeats_are_acknowledged_so_the_connection_stays_up(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator(heartbeat_interval_ms=50)
    async with running(EchoBot(), emulator) as bot:
        async with asyncio.timeout(WAIT_S):
            # Heartbeats raise no client event to await; the emulator only counts them.
            while emulator.heartbeat_count < 4:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert bot.client.latency < WAIT_S

    assert (emulator.identify_count, emulator.resume_count) == (1, 0)


async def test_a_guild_added_while_connected_reaches_the_bot_as_guild_create(
    make_emulator: EmulatorFactory,
) -> None:
    emulator = await make_emulator()
    async with running(EchoBot(), emulator) as bot:
        emulator.add_guild(GUILD_ID + 1, "second-lab", [(GENERAL_ID + 1, "random")])
        emulator.push_message(GENERAL_ID + 1, "hi from the new guild", guild_id=GUILD_ID + 1)
        await emulator.wait_for_sent(GENERAL_ID + 1, 1)
        new_channel = bot.client.get_channel(GENERAL_ID + 1)

    assert isinstance(new_channel, discord.TextChannel)
    assert new_channel.guild.name == "second-lab"
