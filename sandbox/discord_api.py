"""A protocol-faithful local Discord (REST API v10 + gateway) for driving real discord.py.

Point discord.py at it with `discord.http.Route.BASE = emulator.api_base_url` and
`discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(emulator.gateway_url)`, log in with
`emulator.token`, then play the users' side: `push_message` makes a user speak, and
`sent_messages` / `wait_for_sent` show what the bot answered. Disconnects, duplicate deliveries,
RESUME and a refused privileged intent can be provoked to test how the bot copes.

Payload dicts (what `push_message` returns, what `sent_messages` lists) are Discord's wire JSON:
snowflakes are strings, e.g. `int(message["id"])`.
"""

from __future__ import annotations

import asyncio
import secrets

from aiohttp import web

from sandbox.discord_cdn import AttachmentCdn
from sandbox.discord_gateway import DiscordGateway
from sandbox.discord_rest import DEFAULT_RATE_LIMIT, DEFAULT_RATE_LIMIT_WINDOW_S, DiscordRestApi
from sandbox.discord_world import CHANNEL_TYPE_DM, CHANNEL_TYPE_PUBLIC_THREAD, JSON, DiscordWorld

API_PREFIX = "/api/v10"
GATEWAY_PATH = "/gateway"
SERVER_SHUTDOWN_TIMEOUT_S = 1.0
GOING_AWAY_CLOSE_CODE = 1001


class DiscordEmulator:
    """A local Discord that a real discord.py client logs in to and talks with.

    `heartbeat_interval_ms` is what HELLO announces; `rate_limit` requests per
    `rate_limit_window` seconds are allowed per route bucket and channel before 429.
    """

    def __init__(
        self,
        *,
        bot_id: int = 900000000000000001,
        bot_name: str = "hermes",
        message_content_intent: bool = True,
        zlib_stream: bool = True,
        heartbeat_interval_ms: int | None = None,
        rate_limit: int = DEFAULT_RATE_LIMIT,
        rate_limit_window: float = DEFAULT_RATE_LIMIT_WINDOW_S,
    ) -> None:
        self.bot_id = bot_id
        self.token = f"emulated.{bot_id}.{secrets.token_urlsafe(16)}"
        self.world = DiscordWorld(bot_id=bot_id, bot_name=bot_name)
        self.gateway = DiscordGateway(
            self.world,
            token=self.token,
            message_content_intent=message_content_intent,
            zlib_stream=zlib_stream,
            gateway_url=lambda: self.gateway_url,
        )
        if heartbeat_interval_ms is not None:
            self.gateway.heartbeat_interval_ms = heartbeat_interval_ms
        self.rest = DiscordRestApi(self.world, self.gateway, token=self.token)
        self.rest.rate_limiter.limit = rate_limit
        self.rest.rate_limiter.window_s = rate_limit_window
        self.cdn = AttachmentCdn()
        """Attachment bytes: ``cdn.upload(...)`` gives an object for ``push_message``."""
        self.api_base_url = ""
        self.gateway_url = ""
        self._runner: web.AppRunner | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve REST and the gateway on host:port (0 picks a free port)."""
        app = web.Application(middlewares=[self.rest.middleware])
        self.rest.add_routes(app, API_PREFIX)
        self.cdn.add_routes(app)
        app.router.add_get(GATEWAY_PATH, self.gateway.handle)
        self._runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=SERVER_SHUTDOWN_TIMEOUT_S
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = self._runner.addresses[0][1]
        self.api_base_url = f"http://{host}:{bound_port}{API_PREFIX}"
        self.cdn.root_url = f"http://{host}:{bound_port}"
        self.gateway_url = f"ws://{host}:{bound_port}{GATEWAY_PATH}"
        self.rest.gateway_url = self.gateway_url

    async def stop(self) -> None:
        """Close every websocket and stop serving."""
        if self._runner is None:
            return
        await self.gateway.close_all(GOING_AWAY_CLOSE_CODE, "Emulator stopping.")
        await self._runner.cleanup()
        self._runner = None

    # -- the users' side ---------------------------------------------------------------------

    def add_guild(self, guild_id: int, name: str, channels: list[tuple[int, str]]) -> None:
        """Add a guild with text channels (id, name); a connected bot gets GUILD_CREATE now."""
        guild_create = self.world.add_guild(guild_id, name, channels)
        self.gateway.dispatch("GUILD_CREATE", guild_create)

    def add_thread(self, guild_id: int, parent_channel_id: int, thread_id: int, name: str) -> None:
        """Add a public thread under a text channel; a connected bot gets THREAD_CREATE."""
        thread = self.world.add_thread(guild_id, parent_channel_id, thread_id, name)
        self.gateway.dispatch("THREAD_CREATE", {**thread, "newly_created": True})

    def push_message(
        self,
        channel_id: int,
        content: str,
        *,
        author_id: int = 1001,
        author_name: str = "alice",
        guild_id: int | None = None,
        mention_bot: bool = False,
        message_id: int | None = None,
        deliver: bool = True,
        sent_at: float | None = None,
        attachments: list[dict] | None = None,
        stickers: list[dict] | None = None,
    ) -> dict:
        """A user posts a message; the bot receives MESSAGE_CREATE. Returns the message object.

        A channel of a known guild (or thread) is used as is; otherwise, with `guild_id`
        None, `channel_id` is the DM channel between the author and the bot (created on first
        use). The message is kept in the channel's history (GET /channels/{id}/messages). Its
        MESSAGE_CREATE is dropped before any bot has identified, as on Discord; with `deliver`
        False it is never dispatched: a message posted while the bot was offline, which a
        fresh IDENTIFY does not bring back and only the history shows. ``sent_at`` (epoch
        seconds) dates the message (``timestamp`` and the id's time part, which discord.py reads
        as ``created_at``), e.g. with a replayed transcript's times. `attachments` are
        attachment objects (see :func:`sandbox.discord_world.attachment`), `stickers` sticker
        items ({"id", "name", "format_type"}).
        """
        self.world.add_user(author_id, author_name)
        channel_guild = self.world.guild_of_channel(channel_id)
        if guild_id is not None and channel_guild != guild_id:
            raise ValueError(f"channel {channel_id} is not a channel of guild {guild_id}")
        if channel_guild is None:
            self._check_dm_channel(channel_id, author_id)
            self.world.ensure_dm_channel(author_id, channel_id)
        if mention_bot:
            content = f"<@{self.bot_id}> {content}"
        message = self.world.create_message(
            channel_id,
            author_id,
            content,
            message_id=message_id,
            sent_at=sent_at,
            attachments=attachments,
            stickers=stickers,
        )
        if deliver:
            self.gateway.dispatch("MESSAGE_CREATE", message)
        return dict(message)

    def press_button(
        self,
        message_id: int | str,
        custom_id: str,
        *,
        user_id: int = 1001,
        user_name: str = "alice",
    ) -> dict:
        """A user presses the button ``custom_id`` of a bot message: the bot receives
        INTERACTION_CREATE (type 3); returns the interaction (KeyError: no such button)."""
        interaction = self.rest.interactions.press(int(message_id), custom_id, user_id, user_name)
        self.gateway.dispatch("INTERACTION_CREATE", interaction)
        return dict(interaction)

    @property
    def interaction_callbacks(self) -> list[dict]:
        """Every answer to a press: interaction_id, type (4 reply, 6 ack, 7 update), data."""
        return list(self.rest.interactions.callbacks)

    async def wait_for_interaction_callbacks(
        self,
        count: int,
        timeout: float = 10.0,  # noqa: ASYNC109 - same shape as wait_for_sent
    ) -> list[dict]:
        """Wait until at least ``count`` presses were answered; TimeoutError otherwise."""
        interactions = self.rest.interactions
        async with asyncio.timeout(timeout):
            while len(interactions.callbacks) < count:
                interactions.changed.clear()
                await interactions.changed.wait()
        return list(interactions.callbacks)

    def push_raw_event(self, event: str, data: dict) -> None:
        """Dispatch a gateway event exactly as given (e.g. a MESSAGE_CREATE without its author,
        as no real Discord sends): a bot must survive events it cannot parse."""
        self.gateway.dispatch(event, data)

    def _check_dm_channel(self, channel_id: int, author_id: int) -> None:
        existing = self.world.channels.get(channel_id)
        if existing is not None and existing["type"] != CHANNEL_TYPE_DM:
            raise ValueError(f"channel {channel_id} is not a DM channel")
        known = self.world.dm_channel_by_user.get(author_id)
        if (existing is not None or known is not None) and known != channel_id:
            raise ValueError(f"channel {channel_id} is not the DM channel of user {author_id}")

    def redispatch(self, message_id: int | str) -> None:
        """Deliver a stored message's MESSAGE_CREATE again, as Discord sometimes does."""
        self.gateway.dispatch("MESSAGE_CREATE", self.world.messages[int(message_id)])

    def redispatch_after_identify(self, message_id: int | str) -> None:
        """At the next IDENTIFY, right after READY and GUILD_CREATE, deliver a stored message.

        A message posted while the bot connects: it is in the history a catch-up reads and
        also arrives live.
        """
        message = self.world.messages[int(message_id)]
        self.gateway.after_identify.append(("MESSAGE_CREATE", message))

    def delete_channel(self, channel_id: int) -> None:
        """Delete a channel, thread or DM channel with its messages; REST then answers 404."""
        channel = self.world.delete_channel(channel_id)
        if channel["type"] == CHANNEL_TYPE_PUBLIC_THREAD:
            fields = ("id", "guild_id", "parent_id", "type")
            self.gateway.dispatch("THREAD_DELETE", {key: channel[key] for key in fields})
        elif channel["type"] != CHANNEL_TYPE_DM:
            self.gateway.dispatch("CHANNEL_DELETE", channel)

    def delete_by_moderator(self, message_id: int | str) -> None:
        """Someone with Manage Messages deletes a message (the bot's edits then get 404)."""
        message = self.world.messages.pop(int(message_id))
        self.rest.deleted_message_ids.append(int(message_id))
        event = {"id": message["id"], "channel_id": message["channel_id"]}
        self.gateway.dispatch("MESSAGE_DELETE", event)

    def fail_sends(self, channel_id: int, status: int = 503, count: int = 1) -> None:
        """Answer the bot's next `count` messages to a channel with HTTP `status` (nothing is
        created); status 0 closes the connection without an answer instead."""
        self.rest.send_faults.setdefault(channel_id, []).extend([status] * count)

    def forbid_channel(self, channel_id: int) -> None:
        """Take the bot's access to a channel away: its REST routes answer 403 Missing Access."""
        self.rest.forbidden_channels.add(channel_id)

    async def revoke_token(self) -> None:
        """Reset the bot's token, as the Developer Portal does: REST answers 401 and the
        gateway closes with 4004 (authentication failed), now and at every IDENTIFY."""
        self.token = f"{self.token}-revoked"
        self.rest.token = self.gateway.token = self.token
        await self.gateway.disconnect_clients(code=4004, allow_resume=False)

    async def disconnect_clients(self, *, code: int = 4000, allow_resume: bool = True) -> None:
        """Close the bot's websocket; events until it comes back are replayed on RESUME.

        With `allow_resume` False the session is invalidated: RESUME gets INVALID_SESSION
        (false), the bot must IDENTIFY again, and what it missed is lost.
        """
        await self.gateway.disconnect_clients(code=code, allow_resume=allow_resume)

    # -- what the bot did --------------------------------------------------------------------

    def sent_messages(self, channel_id: int | None = None) -> list[dict]:
        """Messages the bot created over REST (current content), oldest first."""
        return [
            dict(message)
            for message in self.rest.sent
            if channel_id is None or message["channel_id"] == str(channel_id)
        ]

    # The timeout parameter is part of the emulator's published API.
    async def wait_for_sent(
        self,
        channel_id: int,
        count: int,
        timeout: float = 10.0,  # noqa: ASYNC109
    ) -> list[dict]:
        """Wait until the bot has sent at least `count` messages to a channel; returns them all.

        Raises TimeoutError naming what was sent when the bot falls short in time.
        """
        try:
            async with asyncio.timeout(timeout):
                while len(sent := self.sent_messages(channel_id)) < count:
                    self.rest.sent_changed.clear()
                    await self.rest.sent_changed.wait()
        except TimeoutError:
            contents = [message["content"] for message in self.sent_messages(channel_id)]
            raise TimeoutError(
                f"bot sent {len(contents)} of {count} messages to {channel_id}: {contents!r}"
            ) from None
        return sent

    # The timeout parameter is part of the emulator's published API.
    async def wait_for_identify(self, count: int, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until the gateway has accepted at least `count` IDENTIFYs in all: a bot that
        has identified receives what users post from then on (before, Discord drops it)."""
        try:
            async with asyncio.timeout(timeout):
                while self.gateway.identify_count < count:
                    self.gateway.identified.clear()
                    await self.gateway.identified.wait()
        except TimeoutError:
            raise TimeoutError(
                f"the bot identified {self.gateway.identify_count} of {count} times"
            ) from None

    @property
    def typing_channels(self) -> list[int]:
        """Channel ids of every POST /channels/{id}/typing, in order."""
        return self.rest.typing_channels

    @property
    def edited_messages(self) -> list[dict]:
        """A snapshot of each message after every PATCH the bot made, in order (``edited_at``:
        ``time.monotonic()`` when it landed)."""
        return self.rest.edits

    @property
    def reactions(self) -> list[tuple[int, int, str]]:
        """(channel id, message id, emoji) for every reaction the bot added."""
        return self.rest.reactions

    @property
    def rate_limited_count(self) -> int:
        """How many REST requests were answered 429."""
        return self.rest.rate_limiter.limited_count

    @property
    def identify_count(self) -> int:
        """How many IDENTIFYs the gateway accepted."""
        return self.gateway.identify_count

    @property
    def resume_count(self) -> int:
        """How many RESUMEs the gateway accepted."""
        return self.gateway.resume_count

    @property
    def heartbeat_count(self) -> int:
        """How many heartbeats (op 1) the gateway received and acknowledged."""
        return self.gateway.heartbeat_count

    @property
    def heartbeat_interval_ms(self) -> int:
        """The heartbeat interval HELLO announces to new connections."""
        return self.gateway.heartbeat_interval_ms

    @heartbeat_interval_ms.setter
    def heartbeat_interval_ms(self, value: int) -> None:
        self.gateway.heartbeat_interval_ms = value

    def message(self, message_id: int | str) -> JSON | None:
        """A stored message by id (pushed or sent), None when unknown or deleted."""
        found = self.world.messages.get(int(message_id))
        return dict(found) if found is not None else None
