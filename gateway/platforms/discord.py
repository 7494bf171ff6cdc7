"""Discord through discord.py: DMs, mentions in guild channels and threads, replies, typing.

The REST base and the gateway websocket come from ``platforms.discord.api_base_url`` and
``gateway_url`` (a rate-limit proxy or a local emulator); discord.py reads them from class
attributes, so they apply process-wide. Reconnects and RESUME are discord.py's; a
MESSAGE_CREATE delivered twice is dropped by the runner's inbound table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import warnings

import yarl

from gateway.config import DiscordSettings
from gateway.inbound import InboundMessage
from gateway.platforms.base import DeliveryTarget, InboundCallback, PlatformAdapter
from gateway.text_split import DISCORD_MESSAGE_LIMIT

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # discord.py imports audioop on 3.11
    import discord

log = logging.getLogger(__name__)

PLATFORM = "discord"
TYPING_INTERVAL_SECONDS = 8.0
"""Discord shows "typing" for about 10 s; repeat a little sooner."""
GUILD_READY_TIMEOUT_SECONDS = 1.0
"""How long discord.py waits for GUILD_CREATE events before it reports ready."""
CONNECT_TIMEOUT_SECONDS = 60.0
"""How long start() waits for READY."""

INTENT_HELP = (
    "discord: the bot's Message Content intent is not enabled, so it cannot read messages. "
    "Enable it in the Discord Developer Portal (your application -> Bot -> Privileged Gateway "
    "Intents -> Message Content Intent), then start the gateway again."
)


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


class DiscordAdapter(PlatformAdapter):
    """A Discord bot user connected over the gateway websocket."""

    name = PLATFORM
    message_limit = DISCORD_MESSAGE_LIMIT
    typing_interval = TYPING_INTERVAL_SECONDS

    def __init__(self, settings: DiscordSettings, token: str) -> None:
        self.settings = settings
        self._token = token
        intents = discord.Intents.default()
        intents.message_content = True
        self.client = discord.Client(
            intents=intents,
            guild_ready_timeout=GUILD_READY_TIMEOUT_SECONDS,
            allowed_mentions=discord.AllowedMentions.none(),
        )
        self.client.event(self.on_ready)
        self.client.event(self.on_message)
        self._ready = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._on_message: InboundCallback | None = None
        self._accepting = False

    async def start(self, on_message: InboundCallback) -> str:
        """Log in, connect the gateway and wait for READY; returns ``name#1234``."""
        if self.settings.api_base_url:
            discord.http.Route.BASE = self.settings.api_base_url.rstrip("/")
        if self.settings.gateway_url:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.settings.gateway_url)
        self._on_message = on_message
        self._accepting = True
        await self.client.login(self._token)
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
        user = self.client.user
        assert user is not None
        return f"{user.name}#{user.discriminator}"

    async def _fail(self, error: BaseException | None) -> None:
        await self.stop()
        if isinstance(error, discord.PrivilegedIntentsRequired):
            log.error(INTENT_HELP)
            raise DiscordStartError(INTENT_HELP) from error
        raise DiscordStartError(f"discord: could not connect: {error}") from error

    async def stop_receiving(self) -> None:
        """Ignore messages from now on (Discord has no acknowledgement to withhold)."""
        self._accepting = False

    async def stop(self) -> None:
        """Close the gateway connection and the HTTP session."""
        self._accepting = False
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
        inbound = self._to_inbound(message)
        if inbound is not None:
            await self._on_message(inbound)

    def _to_inbound(self, message: discord.Message) -> InboundMessage | None:
        me = self.client.user
        if me is None or message.author.bot or message.author.id == me.id:
            return None
        mentioned = self._is_addressed(message, me.id)
        in_guild = message.guild is not None
        if in_guild and self.settings.require_mention and not mentioned:
            return None
        text = re.sub(rf"<@!?{me.id}>", "", message.content).strip()
        if not text:
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
        )

    def _is_addressed(self, message: discord.Message, bot_id: int) -> bool:
        if any(user.id == bot_id for user in message.mentions):
            return True
        resolved = message.reference.resolved if message.reference else None
        return isinstance(resolved, discord.Message) and resolved.author.id == bot_id

    # -- sending ---------------------------------------------------------------------------

    async def send_part(self, target: DeliveryTarget, text: str) -> str:
        """Send one part (Discord renders the Markdown itself)."""
        channel = self.client.get_partial_messageable(int(target.chat_id))
        sent = await channel.send(text)
        return str(sent.id)

    async def send_typing(self, target: DeliveryTarget) -> None:
        channel = self.client.get_partial_messageable(int(target.chat_id))
        await channel.typing()
