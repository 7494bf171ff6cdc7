"""Discord through discord.py: DMs, mentions in guild channels and threads, replies, typing.

The REST base and the gateway websocket come from ``platforms.discord.api_base_url`` and
``gateway_url`` (a rate-limit proxy or a local emulator); discord.py reads them from class
attributes, so they apply process-wide. Reconnects and RESUME are discord.py's; a
MESSAGE_CREATE delivered twice is dropped by the runner's inbound table.

Discord does not redeliver what was sent while the bot was offline (only a RESUME replays
missed events, and a new process always IDENTIFYs afresh), so after the first READY the
adapter catches up: for every channel the runner has recorded messages from, it reads the
history after the newest one and hands over, oldest first, the newest
``platforms.discord.catch_up_messages`` meant for the bot. Live messages in a channel wait
until its catch-up is done, so a conversation is answered in the order it was written.

Retries of a send: discord.py retries inside each request (5 attempts at most: a 429 after
the wait Discord asks for, a 500/502/504 after 1, 3, 5 and 7 s; this cannot be turned off);
what it gives up on, and a broken connection, is retried by the delivery
(:mod:`gateway.delivery.deliverer`), backoff doubling from 1 s to 30 s for at most
``gateway.delivery_retry_seconds`` (600 s) from the first failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import warnings
from collections.abc import Callable
from typing import Any

import aiohttp
import yarl

from gateway.messages.inbound import InboundMessage
from gateway.messages.media_items import MediaItem, MediaUnavailable
from gateway.platforms.base import (
    AdapterHooks,
    ApprovalPress,
    CatchUpSource,
    DeliveryTarget,
    InboundCallback,
    PlatformAuthError,
    SendFailure,
    VoiceNote,
)
from gateway.platforms.discord.approvals import (
    approval_text,
    approval_view,
    closed_text,
    parse_custom_id,
)
from gateway.platforms.discord.intake import (
    INTENT_HELP,
    PLATFORM,
    MessageIntake,
    connection_failure,
    guard_parsers,
    token_rejected_text,
)
from gateway.platforms.discord.live import DiscordLiveReplies
from gateway.platforms.discord.media import discord_media
from gateway.platforms.discord.settings import DiscordSettings
from gateway.platforms.discord.voice import send_discord_voice
from gateway.settings.media import MediaSettings
from gateway.text.split import DISCORD_MESSAGE_LIMIT

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # discord.py imports audioop on 3.11
    import discord

log = logging.getLogger(__name__)

TYPING_INTERVAL_SECONDS = 8.0
"""Discord shows "typing" for about 10 s; repeat a little sooner."""
GUILD_READY_TIMEOUT_SECONDS = 1.0
"""How long discord.py waits for GUILD_CREATE events before it reports ready."""
CONNECT_TIMEOUT_SECONDS = 60.0
"""How long start() waits for READY."""
CATCH_UP_SCAN_LIMIT = 1000
"""The most messages catch-up reads back per channel (10 REST pages) looking for missed ones."""

FIND_SENT_LIMIT = 50
"""Messages read after the last known one when looking for a part a crash left in doubt."""
SERVER_ERROR = 500
TOO_MANY_REQUESTS = 429
NOT_FOUND = 404


class DiscordStartError(RuntimeError):
    """The Discord connection could not be established (the message says what to do)."""


def discord_session_key(message: discord.Message) -> str:
    """DM per channel, a thread per thread, a guild channel per channel."""
    channel = message.channel
    if message.guild is None:
        return f"{PLATFORM}:dm:{channel.id}"
    if isinstance(channel, discord.Thread):
        return f"{PLATFORM}:thread:{channel.id}"
    return f"{PLATFORM}:channel:{channel.id}"


class DiscordAdapter(DiscordLiveReplies):
    """A Discord bot user connected over the gateway websocket."""

    name = PLATFORM
    message_limit = DISCORD_MESSAGE_LIMIT
    typing_interval = TYPING_INTERVAL_SECONDS

    def __init__(
        self,
        settings: DiscordSettings,
        token: str,
        media: MediaSettings | None = None,
        hooks: AdapterHooks | None = None,
    ) -> None:
        super().__init__(hooks)
        self.settings = settings
        self.media = media or MediaSettings()
        self._token = token
        intents = discord.Intents.default()
        intents.message_content = True
        self.client = discord.Client(
            intents=intents,
            guild_ready_timeout=GUILD_READY_TIMEOUT_SECONDS,
            allowed_mentions=discord.AllowedMentions.none(),
        )
        if self.send_gate is not None:
            _gate_requests(self.client.http, self.send_gate)
        self.client.event(self.on_ready)
        self.client.event(self.on_message)
        self.client.event(self.on_interaction)
        # discord.py's own state object holds the parser table its websocket dispatches with.
        self._intake = MessageIntake(self._to_inbound, self._hand_over, self.keep_dead_letter)
        # discord.py's own state object holds the parser table its websocket dispatches with.
        guard_parsers(self.client._connection.parsers, self._intake.event_unparseable)
        self._ready = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._on_message: InboundCallback | None = None
        self._accepting = False
        self.typing_delay = settings.typing_delay
        """Seconds before the first typing indicator; a faster answer needs none."""
        self._catch_up: asyncio.Task[None] | None = None
        # Live messages wait here while a catch-up may still hand over older ones: in every
        # channel until the channels to catch up are known, then in those until each is done.
        self._held: list[discord.Message] = []
        self._hold_every_channel = False
        self._channels_catching_up: set[int] = set()
        self._prompts: dict[str, tuple[str, str]] = {}
        """Open approval prompts: message id -> (tool, preview), to close them with."""

    async def start(self, on_message: InboundCallback) -> str:
        """Log in, connect the gateway and wait for READY; returns ``name#1234``."""
        if self.settings.api_base_url:
            discord.http.Route.BASE = self.settings.api_base_url.rstrip("/")
        if self.settings.gateway_url:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.settings.gateway_url)
        self._on_message = on_message
        self._accepting = True
        catch_up_from = self.catch_up_from if self.settings.catch_up_messages > 0 else None
        self._hold_every_channel = catch_up_from is not None
        try:
            await self.client.login(self._token)
        except discord.LoginFailure:
            await self.stop()
            raise PlatformAuthError(token_rejected_text(self.settings.token_env)) from None
        self._runner = asyncio.create_task(self.client.connect(reconnect=True))
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait(
            {self._runner, ready},
            timeout=CONNECT_TIMEOUT_SECONDS,
            return_when=asyncio.FIRST_COMPLETED,
        )
        ready.cancel()
        if self._runner.done():
            await self._fail(self._runner.exception())
        if not self._ready.is_set():
            await self._fail(TimeoutError("no READY from the Discord gateway"))
        self._runner.add_done_callback(self._connection_ended)
        if catch_up_from is not None:
            self._catch_up = asyncio.create_task(
                self._run_catch_up(catch_up_from), name="discord-catch-up"
            )
        user = self.client.user
        if user is None:  # discord.py sets it from READY, which has arrived
            raise DiscordStartError("discord: READY arrived without the bot's own user")
        return f"{user.name}#{user.discriminator}"

    async def _fail(self, error: BaseException | None) -> None:
        await self.stop()
        if isinstance(error, discord.PrivilegedIntentsRequired):
            log.error(INTENT_HELP)
            raise DiscordStartError(INTENT_HELP) from error
        raise DiscordStartError(f"discord: could not connect: {error}") from error

    def _connection_ended(self, runner: asyncio.Task[None]) -> None:
        """discord.py reconnects by itself; its task ends only when it gave up for good."""
        if not self._accepting or runner.cancelled():
            return
        self.fail(connection_failure(runner.exception(), self.settings.token_env))

    async def stop_receiving(self) -> None:
        """Ignore messages from now on and end a running catch-up.

        Discord has no acknowledgement to withhold: what is not recorded now is in the history
        the next start catches up on.
        """
        self._accepting = False
        if self._catch_up is not None:
            self._catch_up.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._catch_up
            self._catch_up = None
        self._held.clear()

    async def stop(self) -> None:
        """Close the gateway connection and the HTTP session."""
        await self.stop_receiving()
        if not self.client.is_closed():
            await self.client.close()
        if self._runner is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._runner
            self._runner = None

    # -- receiving -------------------------------------------------------------------------

    async def on_ready(self) -> None:
        """discord.py event: connected (again)."""
        self._ready.set()

    async def on_message(self, message: discord.Message) -> None:
        """discord.py event: hand messages meant for the bot to the runner."""
        if not self._accepting or self._on_message is None:
            return
        if self._must_wait(message.channel.id):
            self._held.append(message)
            return
        await self._hand_over_message(message)

    async def _hand_over_message(self, message: discord.Message) -> None:
        await self._intake.take(message)

    async def _hand_over(self, inbound: InboundMessage | None) -> None:
        if inbound is not None and self._accepting and self._on_message is not None:
            await self._on_message(inbound)

    def _must_wait(self, channel_id: int) -> bool:
        """Whether a live message must wait for its channel's catch-up (or for held ones)."""
        return self._catching_up(channel_id) or any(m.channel.id == channel_id for m in self._held)

    def _catching_up(self, channel_id: int) -> bool:
        return self._hold_every_channel or channel_id in self._channels_catching_up

    # -- catching up -----------------------------------------------------------------------

    async def _run_catch_up(self, source: CatchUpSource) -> None:
        """After the first READY: hand over what was sent to the bot while it was offline."""
        try:
            newest = await source()
        except Exception:
            log.exception("discord: catch-up skipped: could not read where to start")
            newest = {}
        channels = {int(c): int(m) for c, m in newest.items() if c.isdigit() and m.isdigit()}
        self._channels_catching_up = set(channels)
        self._hold_every_channel = False
        await self._release_held()
        caught_up = 0
        for channel_id, after_id in channels.items():
            try:
                caught_up += await self._catch_up_channel(channel_id, after_id)
            except (discord.HTTPException, discord.InvalidData) as exc:
                log.warning("discord: catch-up of channel %s skipped: %s", channel_id, exc)
            except Exception as exc:
                # By type only: a recording error's text can quote the message.
                failure = type(exc).__name__
                log.error("discord: catch-up of channel %s failed (%s)", channel_id, failure)
            self._channels_catching_up.discard(channel_id)
            await self._release_held()
        log.info(
            "discord: caught up on %d message(s) sent while offline, from %d channel(s)",
            caught_up,
            len(channels),
        )

    async def _catch_up_channel(self, channel_id: int, after_id: int) -> int:
        """Hand over the newest missed messages for the bot in one channel; returns how many."""
        channel = self.client.get_channel(channel_id) or await self.client.fetch_channel(channel_id)
        if not isinstance(channel, discord.abc.Messageable):
            return 0
        limit = self.settings.catch_up_messages
        newest_first: list[InboundMessage] = []
        skipped = read = 0
        history = channel.history(
            limit=CATCH_UP_SCAN_LIMIT, after=discord.Object(id=after_id), oldest_first=False
        )
        async for message in history:
            read += 1
            inbound = self._to_inbound(message)
            if inbound is None:
                continue
            if len(newest_first) < limit:
                newest_first.append(inbound)
            else:
                skipped += 1
        if skipped:
            log.warning(
                "discord: channel %s: %d older message(s) sent while offline were not answered "
                "(platforms.discord.catch_up_messages is %d)",
                channel_id,
                skipped,
                limit,
            )
        if read >= CATCH_UP_SCAN_LIMIT:
            log.warning(
                "discord: channel %s: only the newest %d messages since the last one handled "
                "were checked",
                channel_id,
                CATCH_UP_SCAN_LIMIT,
            )
        for inbound in reversed(newest_first):
            await self._hand_over(inbound)
        return len(newest_first)

    async def _release_held(self) -> None:
        """Hand over held live messages whose channel is caught up, in arrival order."""
        while True:
            ready = next((m for m in self._held if not self._catching_up(m.channel.id)), None)
            if ready is None:
                return
            self._held.remove(ready)
            await self._hand_over_message(ready)

    def _to_inbound(self, message: discord.Message) -> InboundMessage | None:
        me = self.client.user
        if me is None or message.author.bot or message.author.id == me.id:
            return None
        mentioned = self._is_addressed(message, me.id)
        in_guild = message.guild is not None
        if in_guild and self.settings.require_mention and not mentioned:
            return None
        text = re.sub(rf"<@!?{me.id}>", "", message.content).strip()
        media, unread = discord_media(message)
        if not text and not media and not unread:
            return None
        return InboundMessage(
            platform=PLATFORM,
            chat_id=str(message.channel.id),
            user_id=str(message.author.id),
            text=text,
            platform_message_id=str(message.id),
            session_key=discord_session_key(message),
            username=message.author.name,
            chat_type="group" if in_guild else "private",
            mentioned=mentioned,
            sent_at=message.created_at.timestamp(),
            attachments=unread,
            media=media,
        )

    async def fetch_file(self, item: MediaItem) -> bytes:
        """An attachment's bytes from its CDN URL, through discord.py's HTTP session."""
        if item.file_id is None:
            raise MediaUnavailable("Discord: the attachment has no URL")
        try:
            return await self.client.http.get_from_cdn(item.file_id)
        except discord.HTTPException as exc:
            transient = exc.status >= SERVER_ERROR or exc.status == TOO_MANY_REQUESTS
            words = "the file is gone" if exc.status == NOT_FOUND else f"HTTP {exc.status}"
            raise MediaUnavailable(f"Discord: {words}", transient=transient) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise MediaUnavailable(f"Discord: {type(exc).__name__}", transient=True) from exc

    def _is_addressed(self, message: discord.Message, bot_id: int) -> bool:
        if any(user.id == bot_id for user in message.mentions):
            return True
        resolved = message.reference.resolved if message.reference else None
        return isinstance(resolved, discord.Message) and resolved.author.id == bot_id

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        """discord.py event: a button of an approval prompt pressed. Always answered within
        Discord's 3 seconds: acknowledged (the prompt is then edited), or an ephemeral refusal."""
        if interaction.type != discord.InteractionType.component:
            return
        data: dict[str, object] = dict(interaction.data or {})
        parsed = parse_custom_id(data.get("custom_id"))
        refusal: str | None = "This button is no longer active."
        if parsed is not None and self.on_approval is not None:
            user = interaction.user
            press = ApprovalPress(PLATFORM, parsed[0], parsed[1], str(user.id), user.name)
            refusal = await self.on_approval(press)
        if refusal is None:
            await interaction.response.defer()
        else:
            await interaction.response.send_message(refusal, ephemeral=True)

    # -- sending ---------------------------------------------------------------------------

    async def send_approval(
        self, target: DeliveryTarget, tool: str, preview: str, approval_id: str
    ) -> str:
        """One message naming the tool and its arguments, with the buttons."""
        channel = self.client.get_partial_messageable(int(target.chat_id))
        sent = await channel.send(approval_text(tool, preview), view=approval_view(approval_id))
        self._prompts[str(sent.id)] = (tool, preview)
        return str(sent.id)

    async def close_approval(self, target: DeliveryTarget, message_id: str, outcome: str) -> None:
        """The prompt's question replaced by the outcome, its buttons removed."""
        shown = self._prompts.pop(message_id, None)
        channel = self.client.get_partial_messageable(int(target.chat_id))
        message = channel.get_partial_message(int(message_id))
        if shown is None:  # sent before a restart: just take the buttons away
            await message.edit(view=None)
            return
        await message.edit(content=closed_text(*shown, outcome), view=None)

    async def send_part(self, target: DeliveryTarget, text: str) -> str:
        """Send one part (Discord renders the Markdown itself)."""
        channel = self.client.get_partial_messageable(int(target.chat_id))
        sent = await channel.send(text)
        return str(sent.id)

    async def send_voice(self, target: DeliveryTarget, voice: VoiceNote, caption: str) -> str:
        """A voice message (see :mod:`gateway.platforms.discord.voice`); it takes no caption
        (:attr:`caption_limit` is 0), so the text follows in its own message."""
        return await send_discord_voice(self.client, target, voice)

    async def send_typing(self, target: DeliveryTarget) -> None:
        channel = self.client.get_partial_messageable(int(target.chat_id))
        await channel.typing()

    async def find_sent(
        self, target: DeliveryTarget, text: str, after: str, known: frozenset[str]
    ) -> str | None:
        """Read the channel's history after ``after`` for our own message with this text."""
        me = self.client.user
        if me is None or not after.isdigit():
            return None
        channel = self.client.get_partial_messageable(int(target.chat_id))
        history = channel.history(
            after=discord.Object(id=int(after)), limit=FIND_SENT_LIMIT, oldest_first=True
        )
        async for message in history:
            if message.author.id == me.id and message.content == text:
                if str(message.id) not in known:
                    return str(message.id)
        return None

    def classify_send_error(self, error: Exception) -> SendFailure:
        """A rate limit past discord.py's own waiting, a 5xx (after discord.py's retries) or
        a broken connection is worth another attempt; other HTTP errors (403 missing access,
        404 unknown channel, 400) are final."""
        if isinstance(error, discord.RateLimited):
            return SendFailure(f"rate limited ({error.retry_after:g} s)", True, error.retry_after)
        if isinstance(error, discord.HTTPException):
            reason = f"HTTP {error.status}: {error.text or type(error).__name__}"
            transient = error.status >= SERVER_ERROR or error.status == TOO_MANY_REQUESTS
            return SendFailure(reason, transient=transient)
        if isinstance(error, aiohttp.ClientError):
            return SendFailure(f"{type(error).__name__}: {error}", transient=True)
        return super().classify_send_error(error)


def _gate_requests(http: discord.http.HTTPClient, gate: Callable[[], None]) -> None:
    """Have ``gate`` (which raises to refuse) run before every REST request of ``http``:
    discord.py sends each one through ``HTTPClient.request``, after any rate-limit wait."""
    request = http.request

    async def gated(route: discord.http.Route, **kwargs: Any) -> Any:
        gate()
        return await request(route, **kwargs)

    http.request = gated  # type: ignore[method-assign]
