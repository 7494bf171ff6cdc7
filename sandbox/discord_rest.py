"""The emulated Discord REST API v10: the routes a chat bot calls, with Discord's answers.

Every response is JSON with `Content-Type: application/json` exactly (discord.py only parses
that exact value) and carries `X-RateLimit-*` headers from a fixed-window limiter per route
bucket and major parameter; going past the limit answers 429 the way Discord does.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import time
from collections.abc import Awaitable, Callable

from aiohttp import BodyPartReader, web

from sandbox.discord_gateway import DiscordGateway
from sandbox.discord_interactions import (
    InteractionError,
    Interactions,
    callback_route,
    check_components,
)
from sandbox.discord_ratelimit import RateLimiter, too_many_requests
from sandbox.discord_voice import (
    VOICE_MESSAGE_FLAG,
    SentVoiceMessage,
    VoiceMessageRefused,
    checked_voice,
)
from sandbox.discord_world import APP_OWNER_ID, JSON, DiscordWorld

MAX_MESSAGE_LENGTH = 2000
DEFAULT_RATE_LIMIT = 50
DEFAULT_RATE_LIMIT_WINDOW_S = 1.0
ERROR_UNKNOWN_CHANNEL = 10003
ERROR_UNKNOWN_MESSAGE = 10008
ERROR_UNKNOWN_USER = 10013
ERROR_EMPTY_MESSAGE = 50006
ERROR_INVALID_FORM_BODY = 50035
ERROR_MISSING_ACCESS = 50001
HISTORY_DEFAULT_LIMIT = 50
HISTORY_MAX_LIMIT = 100
HISTORY_ANCHORS = ("around", "before", "after")

DROPPED = 0
"""A planned send fault that closes the connection without answering."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class DiscordApiError(Exception):
    """A Discord error answer: HTTP status plus Discord's JSON error body."""

    def __init__(self, status: int, code: int, message: str, errors: JSON | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: JSON = {"code": code, "message": message}
        if errors is not None:
            self.body["errors"] = errors


def json_response(payload: object, status: int = 200) -> web.Response:
    """A JSON response whose Content-Type is exactly `application/json` (no charset)."""
    response = web.Response(status=status, body=json.dumps(payload).encode())
    response.headers["Content-Type"] = "application/json"
    return response


class DiscordRestApi:
    """REST routes under /api/v10, backed by the shared world and the gateway for events."""

    def __init__(self, world: DiscordWorld, gateway: DiscordGateway, *, token: str) -> None:
        self.world = world
        self.gateway = gateway
        self.token = token
        self.rate_limiter = RateLimiter(DEFAULT_RATE_LIMIT, DEFAULT_RATE_LIMIT_WINDOW_S)
        self.gateway_url = ""
        self.sent: list[JSON] = []
        self.edits: list[JSON] = []
        self.deleted_message_ids: list[int] = []
        self.typing_channels: list[int] = []
        self.reactions: list[tuple[int, int, str]] = []
        self.forbidden_channels: set[int] = set()
        self.voice_forbidden_channels: set[int] = set()
        """Channels where voice messages are refused (403, code 50173)."""
        self.voice_messages: list[SentVoiceMessage] = []
        """Voice messages the bot sent, with their audio and what a decoder found."""
        self.send_faults: dict[int, list[int]] = {}
        """Per channel, the statuses the next message creations answer with (0: dropped)."""
        self.history_requests: list[dict[str, str]] = []
        self.sent_changed = asyncio.Event()
        self.prefix = ""
        self.interactions = Interactions(world)
        """Button presses and the bot's answers (POST /interactions/{id}/{token}/callback)."""

    def add_routes(self, app: web.Application, prefix: str) -> None:
        """Register every route under `prefix` (e.g. /api/v10)."""
        routes = [
            ("GET", "/gateway", self.get_gateway),
            ("GET", "/gateway/bot", self.get_gateway_bot),
            ("GET", "/users/@me", self.get_me),
            ("GET", "/users/{user_id}", self.get_user),
            ("POST", "/users/@me/channels", self.create_dm),
            ("GET", "/oauth2/applications/@me", self.get_application),
            ("GET", "/channels/{channel_id}", self.get_channel),
            ("GET", "/channels/{channel_id}/messages", self.list_messages),
            ("POST", "/channels/{channel_id}/messages", self.create_message),
            ("GET", "/channels/{channel_id}/messages/{message_id}", self.get_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self.edit_message),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", self.delete_message),
            ("POST", "/channels/{channel_id}/typing", self.trigger_typing),
            (
                "PUT",
                "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
                self.add_reaction,
            ),
        ]
        routes.append(
            (
                "POST",
                "/interactions/{interaction_id}/{token}/callback",
                functools.partial(callback_route, self.interactions),
            )
        )
        self.prefix = prefix
        for method, path, handler in routes:
            app.router.add_route(method, prefix + path, handler)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Auth, rate limiting, Discord-shaped errors and rate-limit headers on every answer."""
        if not request.path.startswith(self.prefix + "/"):
            return await handler(request)
        route = request.match_info.route.resource
        template = route.canonical if route is not None else request.path
        bucket = hashlib.sha1(f"{request.method} {template}".encode()).hexdigest()[:32]
        major = request.match_info.get("channel_id", "")
        headers, retry_after = self.rate_limiter.take(bucket, major)
        response: web.StreamResponse
        open_path = request.path.endswith("/gateway") or "/interactions/" in request.path
        if not open_path and not self._authorized(request):
            response = json_response({"message": "401: Unauthorized", "code": 0}, 401)
        elif retry_after is not None:
            response = too_many_requests(retry_after)
        else:
            try:
                response = await handler(request)
            except DiscordApiError as error:
                response = json_response(error.body, error.status)
            except web.HTTPException as error:
                response = json_response(
                    {"message": f"{error.status}: {error.reason}", "code": 0}, error.status
                )
        response.headers.update(headers)
        return response

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bot {self.token}"

    # -- identity --------------------------------------------------------------------------

    async def get_gateway(self, request: web.Request) -> web.Response:
        """GET /gateway: where to open the websocket."""
        return json_response({"url": self.gateway_url})

    async def get_gateway_bot(self, request: web.Request) -> web.Response:
        """GET /gateway/bot: the websocket URL, shard count and identify budget."""
        start_limit = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}
        return json_response(
            {"url": self.gateway_url, "shards": 1, "session_start_limit": start_limit}
        )

    async def get_me(self, request: web.Request) -> web.Response:
        """GET /users/@me: the bot's own user."""
        return json_response(self.world.bot_user())

    async def get_user(self, request: web.Request) -> web.Response:
        """GET /users/{id}: any known user."""
        user = self.world.user(_snowflake(request, "user_id"))
        if user is None:
            raise DiscordApiError(404, ERROR_UNKNOWN_USER, "Unknown User")
        return json_response(user)

    async def get_application(self, request: web.Request) -> web.Response:
        """GET /oauth2/applications/@me: the bot's application."""
        bot = self.world.bot_user()
        owner = self.world.user(APP_OWNER_ID)
        return json_response(
            {
                "id": bot["id"],
                "name": bot["username"],
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "verify_key": "0" * 64,
                "owner": owner,
                "team": None,
                "flags": 0,
                "bot": bot,
            }
        )

    # -- channels ----------------------------------------------------------------------------

    async def create_dm(self, request: web.Request) -> web.Response:
        """POST /users/@me/channels: open (or reuse) the DM channel with a user."""
        body = await _json_body(request)
        try:
            recipient_id = int(body["recipient_id"])
        except (KeyError, TypeError, ValueError) as error:
            raise _invalid_form("recipient_id", "BASE_TYPE_REQUIRED", "Required.") from error
        return json_response(self.world.ensure_dm_channel(recipient_id))

    async def get_channel(self, request: web.Request) -> web.Response:
        """GET /channels/{id}: a text channel, thread or DM channel."""
        return json_response(self._channel(request))

    async def trigger_typing(self, request: web.Request) -> web.Response:
        """POST /channels/{id}/typing: show the typing indicator (recorded for tests)."""
        self._channel(request)
        self.typing_channels.append(_snowflake(request, "channel_id"))
        return web.Response(status=204)

    def _channel(self, request: web.Request) -> JSON:
        channel_id = _snowflake(request, "channel_id")
        channel = self.world.channels.get(channel_id)
        if channel is None:
            raise DiscordApiError(404, ERROR_UNKNOWN_CHANNEL, "Unknown Channel")
        if channel_id in self.forbidden_channels:
            raise DiscordApiError(403, ERROR_MISSING_ACCESS, "Missing Access")
        return channel

    # -- messages ----------------------------------------------------------------------------

    async def list_messages(self, request: web.Request) -> web.Response:
        """GET /channels/{id}/messages: a page of history, newest first (see channel_history).

        `limit` is 1-100 (default 50); `around`, `before` and `after` are mutually exclusive.
        """
        self._channel(request)
        self.history_requests.append(dict(request.query))
        limit = _query_int(request, "limit")
        if limit is None:
            limit = HISTORY_DEFAULT_LIMIT
        if not 1 <= limit <= HISTORY_MAX_LIMIT:
            raise _invalid_form(
                "limit", "NUMBER_TYPE_MAX", f"Must be between 1 and {HISTORY_MAX_LIMIT}."
            )
        anchors = {name: _query_int(request, name) for name in HISTORY_ANCHORS}
        given = {name: value for name, value in anchors.items() if value is not None}
        if len(given) > 1:
            raise _invalid_form(
                "around", "BASE_TYPE_BAD", "Only one of around, before and after may be given."
            )
        page = self.world.channel_history(_snowflake(request, "channel_id"), limit=limit, **given)
        return json_response(page)

    async def create_message(self, request: web.Request) -> web.Response:
        """POST /channels/{id}/messages: the bot sends a message (JSON or multipart)."""
        self._channel(request)
        channel_id = _snowflake(request, "channel_id")
        faults = self.send_faults.get(channel_id)
        if faults:
            status = faults.pop(0)
            if status == DROPPED:
                if request.transport is not None:
                    request.transport.close()
                return web.Response()  # never written: the connection is already gone
            raise DiscordApiError(status, 0, f"{status}: injected failure")
        payload, attachments, files = await self._message_body(request)
        try:
            allowed = channel_id not in self.voice_forbidden_channels
            voice = checked_voice(payload, files, allowed=allowed)
        except VoiceMessageRefused as error:
            raise DiscordApiError(error.status, error.code, error.message) from error
        if voice is not None:
            attachments = [voice.attachment(attachments[0])]
        content = payload.get("content") or ""
        if not isinstance(content, str):
            raise _invalid_form("content", "BASE_TYPE_STRING", "Must be a string.")
        if not content and not attachments and not payload.get("embeds"):
            raise DiscordApiError(400, ERROR_EMPTY_MESSAGE, "Cannot send an empty message")
        if len(content) > MAX_MESSAGE_LENGTH:
            raise _invalid_form(
                "content",
                "BASE_TYPE_MAX_LENGTH",
                f"Must be {MAX_MESSAGE_LENGTH} or fewer in length.",
            )
        message = self.world.create_message(
            channel_id,
            self.world.bot_id,
            content,
            reply_to=self._reply_reference(payload.get("message_reference"), channel_id),
            attachments=attachments,
            nonce=payload.get("nonce"),
        )
        message["embeds"] = list(payload.get("embeds") or [])
        self._set_components(message, payload)
        if voice is not None:
            message["flags"] = VOICE_MESSAGE_FLAG
            self.voice_messages.append(voice.sent(message))
        self.sent.append(message)
        self.sent_changed.set()
        # Discord echoes the bot's own messages back over the gateway.
        self.gateway.dispatch("MESSAGE_CREATE", message)
        return json_response(message)

    def _set_components(self, message: JSON, payload: JSON) -> None:
        """Buttons given with a send or an edit (an edit's empty list removes them)."""
        if "components" not in payload:
            return
        try:
            check_components(payload["components"])
        except InteractionError as error:
            raise DiscordApiError(error.status, error.code, error.message) from error
        message["components"] = list(payload["components"] or [])

    def _reply_reference(self, reference: JSON | None, channel_id: int) -> JSON | None:
        if not reference:
            return None
        message_id = int(reference["message_id"])
        if message_id not in self.world.messages and reference.get("fail_if_not_exists", True):
            raise _invalid_form("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message")
        answer: JSON = {
            "type": 0,
            "message_id": str(message_id),
            "channel_id": str(reference.get("channel_id") or channel_id),
        }
        guild_id = self.world.guild_of_channel(channel_id)
        if guild_id is not None:
            answer["guild_id"] = str(guild_id)
        return answer

    async def _message_body(
        self, request: web.Request
    ) -> tuple[JSON, list[JSON], list[tuple[str, bytes]]]:
        """The JSON payload, attachments and uploaded (filename, bytes) of a message request."""
        if not request.content_type.startswith("multipart/"):
            return await _json_body(request), [], []
        payload: JSON = {}
        attachments: list[JSON] = []
        files: list[tuple[str, bytes]] = []
        reader = await request.multipart()
        async for part in reader:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                payload = json.loads(await part.text())
            elif part.filename:
                data = bytes(await part.read())
                files.append((part.filename, data))
                attachment_id = self.world.snowflakes.next()
                attachments.append(
                    {
                        "id": str(attachment_id),
                        "filename": part.filename,
                        "size": len(data),
                        "url": f"http://127.0.0.1/attachments/{attachment_id}/{part.filename}",
                        "proxy_url": f"http://127.0.0.1/attachments/{attachment_id}",
                        "content_type": part.headers.get("Content-Type"),
                    }
                )
        return payload, attachments, files

    def _message(self, request: web.Request) -> JSON:
        self._channel(request)
        message = self.world.messages.get(_snowflake(request, "message_id"))
        if message is None or message["channel_id"] != request.match_info["channel_id"]:
            raise DiscordApiError(404, ERROR_UNKNOWN_MESSAGE, "Unknown Message")
        return message

    async def get_message(self, request: web.Request) -> web.Response:
        """GET /channels/{id}/messages/{id}: one stored message."""
        return json_response(self._message(request))

    async def edit_message(self, request: web.Request) -> web.Response:
        """PATCH /channels/{id}/messages/{id}: the bot edits its own message's content."""
        message = self._message(request)
        if message["author"]["id"] != str(self.world.bot_id):
            raise DiscordApiError(403, 50005, "Cannot edit a message authored by another user")
        payload = await _json_body(request)
        content = payload.get("content", message["content"]) or ""
        if len(content) > MAX_MESSAGE_LENGTH:
            raise _invalid_form(
                "content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_MESSAGE_LENGTH} or fewer."
            )
        self._set_components(message, payload)
        edited = self.world.edit_message(int(message["id"]), content)
        self.edits.append({**edited, "edited_at": time.monotonic()})  # when a user saw it
        self.gateway.dispatch("MESSAGE_UPDATE", edited)
        return json_response(edited)

    async def delete_message(self, request: web.Request) -> web.Response:
        """DELETE /channels/{id}/messages/{id}: remove a message (204)."""
        message = self._message(request)
        message_id = int(message["id"])
        del self.world.messages[message_id]
        self.deleted_message_ids.append(message_id)
        event: JSON = {"id": message["id"], "channel_id": message["channel_id"]}
        if "guild_id" in message:
            event["guild_id"] = message["guild_id"]
        self.gateway.dispatch("MESSAGE_DELETE", event)
        return web.Response(status=204)

    async def add_reaction(self, request: web.Request) -> web.Response:
        """PUT .../reactions/{emoji}/@me: the bot reacts to a message (recorded for tests)."""
        message = self._message(request)
        emoji = request.match_info["emoji"]
        self.reactions.append((int(message["channel_id"]), int(message["id"]), emoji))
        return web.Response(status=204)


def _snowflake(request: web.Request, name: str) -> int:
    try:
        return int(request.match_info[name])
    except ValueError as error:
        raise _invalid_form(name, "NUMBER_TYPE_COERCE", "Value is not snowflake.") from error


def _query_int(request: web.Request, name: str) -> int | None:
    """An integer (or snowflake) query parameter, None when absent; junk is a 400."""
    raw = request.query.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as error:
        raise _invalid_form(name, "NUMBER_TYPE_COERCE", "Value is not int.") from error


async def _json_body(request: web.Request) -> JSON:
    try:
        body = await request.json()
    except ValueError as error:
        raise DiscordApiError(400, ERROR_INVALID_FORM_BODY, "Invalid Form Body") from error
    if not isinstance(body, dict):
        raise DiscordApiError(400, ERROR_INVALID_FORM_BODY, "Invalid Form Body")
    return body


def _invalid_form(field_name: str, code: str, message: str) -> DiscordApiError:
    errors = {field_name: {"_errors": [{"code": code, "message": message}]}}
    return DiscordApiError(400, ERROR_INVALID_FORM_BODY, "Invalid Form Body", errors)
