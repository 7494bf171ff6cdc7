"""Message components and interactions: a user pressing a button of a bot message.

A press is an ``INTERACTION_CREATE`` (type 3, ``data.custom_id``) over the gateway; the bot
answers it once with ``POST /interactions/{id}/{token}/callback`` (type 4 a reply, with flag
64 only the presser sees it; 6 acknowledges; 7 updates the pressed message). An unknown
interaction is answered 404 (10062), a second answer 400 (40060), as Discord does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from sandbox.discord_world import JSON, DiscordWorld

INTERACTION_COMPONENT = 3
BUTTON = 2
MAX_CUSTOM_ID = 100
ATTACHMENT_SIZE_LIMIT = 26_214_400
CALLBACK_TYPES = {4, 5, 6, 7}
UPDATE_MESSAGE = 7


class InteractionError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def check_components(components: Any) -> None:
    """Refuse buttons Discord would refuse (custom_id of 1 to 100 characters)."""
    for row in components or []:
        for component in row.get("components", []):
            custom_id = component.get("custom_id")
            if custom_id is not None and not 1 <= len(str(custom_id)) <= MAX_CUSTOM_ID:
                raise InteractionError(400, 50035, "Invalid Form Body: custom_id")


@dataclass(slots=True)
class Interactions:
    """Presses made and the bot's answers to them."""

    world: DiscordWorld
    open: dict[str, JSON] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    callbacks: list[JSON] = field(default_factory=list)
    """Every callback: interaction_id, type, data (the body's ``data``)."""
    _next: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at every callback (waiters clear it)."""

    def press(self, message_id: int, custom_id: str, user_id: int, user_name: str) -> JSON:
        """The INTERACTION_CREATE payload for ``user_id`` pressing ``custom_id`` (KeyError if
        the message has no such button)."""
        message = self.world.messages[message_id]
        buttons = itertools.chain.from_iterable(
            row.get("components", []) for row in message.get("components", [])
        )
        if not any(b.get("custom_id") == custom_id for b in buttons):
            raise KeyError(f"message {message_id} has no button {custom_id!r}")
        user = self.world.users.get(user_id) or self.world.add_user(user_id, user_name)
        channel_id = int(message["channel_id"])
        channel = self.world.channels[channel_id]
        interaction_id = str(self.world.snowflakes.next())
        payload: JSON = {
            "id": interaction_id,
            "application_id": str(self.world.bot_id),
            "type": INTERACTION_COMPONENT,
            "token": f"itoken-{next(self._next)}-{secrets.token_hex(8)}",
            "version": 1,
            "channel_id": str(channel_id),
            "channel": dict(channel),
            "message": dict(message),
            "data": {"custom_id": custom_id, "component_type": BUTTON},
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
            "app_permissions": "0",
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {},
        }
        guild_id = message.get("guild_id")
        if guild_id is not None:
            self.world.ensure_member(int(guild_id), user_id)
            member = self.world.member_payload(int(guild_id), user_id, with_user=False)
            payload.update(guild_id=guild_id, member={**member, "user": user, "permissions": "0"})
            payload["context"] = 0
        else:
            payload.update(user=user, context=1)
        self.open[interaction_id] = payload
        return payload

    def callback(self, interaction_id: str, token: str, body: JSON) -> None:
        """The bot's one answer to a press."""
        pressed = self.open.get(interaction_id)
        if pressed is None or pressed["token"] != token:
            raise InteractionError(404, 10062, "Unknown interaction")
        if interaction_id in self.answered:
            raise InteractionError(400, 40060, "Interaction has already been acknowledged.")
        kind = body.get("type")
        if kind not in CALLBACK_TYPES:
            raise InteractionError(400, 50035, "Invalid Form Body: type")
        data = body.get("data") or {}
        if kind == UPDATE_MESSAGE:
            check_components(data.get("components"))
            message = self.world.messages[int(pressed["message"]["id"])]
            if "content" in data:
                self.world.edit_message(int(message["id"]), data["content"] or "")
            if "components" in data:
                message["components"] = list(data["components"] or [])
        self.answered.add(interaction_id)
        self.callbacks.append({"interaction_id": interaction_id, "type": kind, "data": data})
        self.changed.set()


async def callback_route(interactions: Interactions, request: web.Request) -> web.Response:
    """POST /interactions/{interaction_id}/{token}/callback (no bot token: the interaction's
    own token authorises it). With ``with_response`` the answer is the interaction callback
    response object, else 204."""
    interaction_id = request.match_info["interaction_id"]
    try:
        body = await request.json()
        interactions.callback(interaction_id, request.match_info["token"], body)
    except InteractionError as error:
        return _json({"message": error.message, "code": error.code}, error.status)
    if request.query.get("with_response", "").lower() not in {"1", "true"}:
        return web.Response(status=204)
    flags = int((body.get("data") or {}).get("flags") or 0)
    answer = {
        "interaction": {
            "id": interaction_id,
            "type": INTERACTION_COMPONENT,
            "response_message_loading": body.get("type") == 5,
            "response_message_ephemeral": bool(flags & 64),
        },
        "resource": {"type": body.get("type")},
    }
    return _json(answer, 200)


def _json(payload: object, status: int) -> web.Response:
    """JSON with exactly ``application/json`` as its type (discord.py parses nothing else)."""
    response = web.Response(status=status, body=json.dumps(payload).encode())
    response.headers["Content-Type"] = "application/json"
    return response
