"""The emulated Discord gateway: the websocket a bot keeps open to receive events.

It speaks gateway v10 as discord.py expects it: HELLO, heartbeats and their ACKs, IDENTIFY
answered by READY and one GUILD_CREATE per guild, sequence-numbered dispatches, and RESUME,
which replays every dispatch the client missed and then sends RESUMED. Each connection may use
`compress=zlib-stream`: one zlib stream per connection, every payload flushed with Z_SYNC_FLUSH
and sent as a binary frame.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag

from aiohttp import WSMsgType, web

from sandbox.discord_world import JSON, DiscordWorld

logger = logging.getLogger(__name__)

GATEWAY_VERSION = 10
DEFAULT_HEARTBEAT_INTERVAL_MS = 41_250
CLIENT_CLOSE_TIMEOUT_S = 5.0
APPLICATION_FLAG_GATEWAY_MESSAGE_CONTENT = 1 << 19


class Op(IntEnum):
    """Gateway opcodes."""

    DISPATCH = 0
    HEARTBEAT = 1
    IDENTIFY = 2
    PRESENCE_UPDATE = 3
    VOICE_STATE_UPDATE = 4
    RESUME = 6
    RECONNECT = 7
    REQUEST_GUILD_MEMBERS = 8
    INVALID_SESSION = 9
    HELLO = 10
    HEARTBEAT_ACK = 11


class CloseCode(IntEnum):
    """Gateway close codes the emulator uses."""

    UNKNOWN_ERROR = 4000
    UNKNOWN_OPCODE = 4001
    DECODE_ERROR = 4002
    NOT_AUTHENTICATED = 4003
    AUTHENTICATION_FAILED = 4004
    ALREADY_AUTHENTICATED = 4005
    INVALID_INTENTS = 4013
    DISALLOWED_INTENTS = 4014


class Intent(IntFlag):
    """The gateway intents that decide which events a session receives."""

    GUILDS = 1 << 0
    GUILD_MESSAGES = 1 << 9
    DIRECT_MESSAGES = 1 << 12
    MESSAGE_CONTENT = 1 << 15


# What Discord empties in guild messages for a session without the MESSAGE_CONTENT intent.
_BLANKED_WITHOUT_CONTENT_INTENT: dict[str, object] = {
    "content": "",
    "embeds": [],
    "attachments": [],
    "components": [],
}
# Sent to every session whatever its intents.
_UNGATED_EVENTS = frozenset({"READY", "RESUMED", "GUILD_CREATE", "GUILD_MEMBERS_CHUNK"})


@dataclass(frozen=True)
class _Close:
    """An outbox item asking the writer to close the websocket after what precedes it."""

    code: int
    reason: str


class GatewayConnection:
    """One websocket: payloads go out in order through an outbox drained by one writer task."""

    def __init__(self, ws: web.WebSocketResponse, *, zlib_stream: bool) -> None:
        self.ws = ws
        self.session: GatewaySession | None = None
        self._outbox: asyncio.Queue[JSON | _Close] = asyncio.Queue()
        # One compressor for the whole connection: the client keeps one inflate context.
        self._compressor = zlib.compressobj() if zlib_stream else None
        self.writer_task = asyncio.create_task(self._drain_outbox())

    def send(self, payload: JSON) -> None:
        """Queue a payload; it is sent after everything queued before it."""
        self._outbox.put_nowait(payload)

    def close_soon(self, code: int, reason: str) -> None:
        """Queue a close frame after the payloads already queued."""
        self._outbox.put_nowait(_Close(code, reason))

    async def _drain_outbox(self) -> None:
        while True:
            item = await self._outbox.get()
            if isinstance(item, _Close):
                await self.ws.close(code=item.code, message=item.reason.encode())
                return
            if self.ws.closed:
                return
            text = json.dumps(item, separators=(",", ":"))
            try:
                if self._compressor is None:
                    await self.ws.send_str(text)
                else:
                    chunk = self._compressor.compress(text.encode())
                    await self.ws.send_bytes(chunk + self._compressor.flush(zlib.Z_SYNC_FLUSH))
            except ConnectionResetError:
                return


@dataclass
class GatewaySession:
    """A gateway session: what it asked for and every dispatch it was given, for replay."""

    session_id: str
    intents: int
    resumable: bool = True
    sequence: int = 0
    log: list[JSON] = field(default_factory=list)
    connection: GatewayConnection | None = None

    def record(self, event: str, data: JSON) -> JSON:
        """Give a dispatch the next sequence number and keep it for a later RESUME."""
        self.sequence += 1
        payload: JSON = {"op": Op.DISPATCH, "t": event, "s": self.sequence, "d": data}
        self.log.append(payload)
        return payload


class DiscordGateway:
    """The gateway endpoint and the one session the bot holds (the emulator runs one shard)."""

    def __init__(
        self,
        world: DiscordWorld,
        *,
        token: str,
        message_content_intent: bool,
        zlib_stream: bool,
        gateway_url: Callable[[], str],
    ) -> None:
        self.world = world
        self.token = token
        self.message_content_intent = message_content_intent
        self.zlib_stream = zlib_stream
        self.heartbeat_interval_ms = DEFAULT_HEARTBEAT_INTERVAL_MS
        self._gateway_url = gateway_url
        self.session: GatewaySession | None = None
        self.connections: set[GatewayConnection] = set()
        self.identify_count = 0
        self.identified = asyncio.Event()
        """Set at each accepted IDENTIFY (cleared by whoever waits for the next one)."""
        self.resume_count = 0
        self.heartbeat_count = 0
        self.after_identify: list[tuple[str, JSON]] = []
        """Dispatches sent right after the next READY and GUILD_CREATEs, then forgotten."""

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """Serve one websocket connection from HELLO to close."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        wants_zlib = request.query.get("compress") == "zlib-stream"
        connection = GatewayConnection(ws, zlib_stream=self.zlib_stream and wants_zlib)
        self.connections.add(connection)
        connection.send(_op(Op.HELLO, {"heartbeat_interval": self.heartbeat_interval_ms}))
        try:
            async for message in ws:
                if message.type is not WSMsgType.TEXT:
                    connection.close_soon(CloseCode.DECODE_ERROR, "Error while decoding payload.")
                    continue
                self._on_client_payload(connection, message.data)
        finally:
            self.connections.discard(connection)
            if connection.session is not None and connection.session.connection is connection:
                connection.session.connection = None
            connection.close_soon(ws.close_code or CloseCode.UNKNOWN_ERROR, "")
            await connection.writer_task
        return ws

    def _on_client_payload(self, connection: GatewayConnection, raw: str) -> None:
        try:
            payload = json.loads(raw)
            op = Op(payload["op"])
        except (ValueError, KeyError, TypeError):
            connection.close_soon(CloseCode.DECODE_ERROR, "Error while decoding payload.")
            return
        data = payload.get("d")
        if op is Op.HEARTBEAT:
            self.heartbeat_count += 1
            connection.send(_op(Op.HEARTBEAT_ACK, None))
        elif op is Op.IDENTIFY:
            self._identify(connection, data)
        elif op is Op.RESUME:
            self._resume(connection, data)
        elif connection.session is None:
            connection.close_soon(CloseCode.NOT_AUTHENTICATED, "Not authenticated.")
        elif op is Op.REQUEST_GUILD_MEMBERS:
            self._send_member_chunk(connection, data)
        elif op not in (Op.PRESENCE_UPDATE, Op.VOICE_STATE_UPDATE):
            connection.close_soon(CloseCode.UNKNOWN_OPCODE, "Unknown opcode.")

    def _identify(self, connection: GatewayConnection, data: JSON) -> None:
        if connection.session is not None:
            connection.close_soon(CloseCode.ALREADY_AUTHENTICATED, "Already authenticated.")
            return
        if not self._token_ok(data):
            connection.close_soon(CloseCode.AUTHENTICATION_FAILED, "Authentication failed.")
            return
        intents = data.get("intents")
        if not isinstance(intents, int) or intents < 0:
            connection.close_soon(CloseCode.INVALID_INTENTS, "Invalid intent(s).")
            return
        if intents & Intent.MESSAGE_CONTENT and not self.message_content_intent:
            connection.close_soon(CloseCode.DISALLOWED_INTENTS, "Disallowed intent(s).")
            return
        self.identify_count += 1
        self.identified.set()
        if self.session is not None and self.session.connection is not None:
            self.session.connection.close_soon(CloseCode.UNKNOWN_ERROR, "Session replaced.")
        session = GatewaySession(session_id=uuid.uuid4().hex, intents=intents)
        self.session = session
        self._attach(session, connection)
        self.dispatch("READY", self._ready_payload(session))
        for guild_id in self.world.guilds:
            self.dispatch("GUILD_CREATE", self.world.guild_create_payload(guild_id))
        queued, self.after_identify = self.after_identify, []
        for event, event_data in queued:
            self.dispatch(event, event_data)

    def _resume(self, connection: GatewayConnection, data: JSON) -> None:
        if connection.session is not None:
            connection.close_soon(CloseCode.ALREADY_AUTHENTICATED, "Already authenticated.")
            return
        session = self.session
        valid = (
            session is not None
            and session.resumable
            and self._token_ok(data)
            and data.get("session_id") == session.session_id
        )
        if session is None or not valid:
            # false: the session cannot be resumed, the client must IDENTIFY again.
            connection.send(_op(Op.INVALID_SESSION, False))
            return
        self.resume_count += 1
        if session.connection is not None:
            session.connection.close_soon(CloseCode.UNKNOWN_ERROR, "Session resumed elsewhere.")
        last_seen = data.get("seq") or 0
        for payload in session.log:
            if payload["s"] > last_seen:
                connection.send(payload)
        self._attach(session, connection)
        self.dispatch("RESUMED", {})

    def _attach(self, session: GatewaySession, connection: GatewayConnection) -> None:
        session.connection = connection
        connection.session = session

    def _token_ok(self, data: JSON) -> bool:
        token = data.get("token") if isinstance(data, dict) else None
        return isinstance(token, str) and token.removeprefix("Bot ") == self.token

    def _ready_payload(self, session: GatewaySession) -> JSON:
        flags = APPLICATION_FLAG_GATEWAY_MESSAGE_CONTENT if self.message_content_intent else 0
        return {
            "v": GATEWAY_VERSION,
            "user": self.world.bot_user(),
            "guilds": [{"id": str(gid), "unavailable": True} for gid in self.world.guilds],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self._gateway_url(),
            "application": {"id": str(self.world.bot_id), "flags": flags},
            "shard": [0, 1],
            "private_channels": [],
            "relationships": [],
            "user_settings": {},
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
        }

    def _send_member_chunk(self, connection: GatewayConnection, data: JSON) -> None:
        try:
            guild_id = int(data["guild_id"])
        except (KeyError, TypeError, ValueError):
            connection.close_soon(CloseCode.DECODE_ERROR, "Error while decoding payload.")
            return
        guild = self.world.guilds.get(guild_id)
        members = [
            self.world.member_payload(guild_id, user_id, with_user=True)
            for user_id in (guild.member_joined_at if guild else {})
        ]
        chunk: JSON = {
            "guild_id": str(guild_id),
            "members": members,
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [],
        }
        if data.get("nonce") is not None:
            chunk["nonce"] = data["nonce"]
        self.dispatch("GUILD_MEMBERS_CHUNK", chunk)

    def dispatch(self, event: str, data: JSON) -> None:
        """Record a dispatch in the current session and send it if a connection is live.

        With no session (no bot has identified yet) the event is dropped, as Discord drops
        events for a bot that is not connected; while the session is disconnected it is kept
        and replayed on RESUME.
        """
        session = self.session
        if session is None:
            return
        shaped = _shape_for_intents(event, copy.deepcopy(data), session.intents, self.world.bot_id)
        if shaped is None:
            return
        payload = session.record(event, shaped)
        if session.connection is not None:
            session.connection.send(payload)

    async def disconnect_clients(self, *, code: int, allow_resume: bool) -> None:
        """Close every websocket with `code`; without `allow_resume` the session is invalid."""
        if self.session is not None:
            self.session.resumable = allow_resume
            self.session.connection = None
        await self.close_all(code, "Emulator closed the connection.")

    async def close_all(self, code: int, reason: str) -> None:
        """Close every connection and wait until their writers have finished."""
        connections = list(self.connections)
        for connection in connections:
            connection.close_soon(code, reason)
        writers = [connection.writer_task for connection in connections]
        if writers:
            await asyncio.wait(writers, timeout=CLIENT_CLOSE_TIMEOUT_S)


def _op(op: Op, data: object) -> JSON:
    return {"op": op, "d": data, "s": None, "t": None}


def _shape_for_intents(event: str, data: JSON, intents: int, bot_id: int) -> JSON | None:
    """What a session with these intents receives of an event; None when it receives nothing."""
    if event in _UNGATED_EVENTS:
        return data
    if event.startswith("THREAD_") or event.startswith("CHANNEL_"):
        return data if intents & Intent.GUILDS else None
    if not event.startswith("MESSAGE_"):
        return data
    in_guild = "guild_id" in data
    needed = Intent.GUILD_MESSAGES if in_guild else Intent.DIRECT_MESSAGES
    if not intents & needed:
        return None
    if in_guild and not intents & Intent.MESSAGE_CONTENT and not _content_visible(data, bot_id):
        # Without the privileged intent Discord blanks guild message content.
        for key, empty in _BLANKED_WITHOUT_CONTENT_INTENT.items():
            if key in data:
                data[key] = copy.copy(empty)
    return data


def _content_visible(message: JSON, bot_id: int) -> bool:
    """Guild messages by the bot or mentioning it keep their content without the intent."""
    author_id = message.get("author", {}).get("id")
    mentioned = {user.get("id") for user in message.get("mentions", [])}
    return author_id == str(bot_id) or str(bot_id) in mentioned
