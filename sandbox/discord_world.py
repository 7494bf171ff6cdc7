"""The data an emulated Discord holds (users, guilds, channels, messages) and its wire payloads.

Everything here speaks Discord's JSON shapes as API v10 sends them: snowflakes are strings,
timestamps are ISO 8601 with an offset. The REST and gateway halves of the emulator share one
`DiscordWorld`, so a message a test pushes and a message the bot sends live in the same place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sandbox.discord_snowflakes import SnowflakeFactory, iso_at, iso_now

JSON = dict[str, Any]


CHANNEL_TYPE_GUILD_TEXT = 0
CHANNEL_TYPE_DM = 1
CHANNEL_TYPE_PUBLIC_THREAD = 11
MESSAGE_TYPE_DEFAULT = 0
MESSAGE_TYPE_REPLY = 19
THREAD_AUTO_ARCHIVE_MINUTES = 1440

# What @everyone may do in an emulated guild: enough for a chat bot to read, answer and react.
_PERMISSION_BITS = {
    "add_reactions": 1 << 6,
    "view_channel": 1 << 10,
    "send_messages": 1 << 11,
    "embed_links": 1 << 14,
    "attach_files": 1 << 15,
    "read_message_history": 1 << 16,
    "use_external_emojis": 1 << 18,
    "send_messages_in_threads": 1 << 38,
}
EVERYONE_PERMISSIONS = sum(_PERMISSION_BITS.values())

APP_OWNER_ID = 900000000000000000
_USER_MENTION = re.compile(r"<@!?(\d+)>")
# MESSAGE_CREATE/UPDATE carry these; a message fetched over REST does not.
_GATEWAY_ONLY_MESSAGE_FIELDS = frozenset({"guild_id", "member"})


@dataclass
class Guild:
    """One emulated guild: its name, text channels, threads and the users who are members."""

    guild_id: int
    name: str
    channel_ids: list[int] = field(default_factory=list)
    thread_ids: list[int] = field(default_factory=list)
    member_joined_at: dict[int, str] = field(default_factory=dict)
    joined_at: str = field(default_factory=iso_now)


class DiscordWorld:
    """The emulated Discord's data and the builders of its wire payloads."""

    def __init__(self, *, bot_id: int, bot_name: str) -> None:
        self.bot_id = bot_id
        self.snowflakes = SnowflakeFactory()
        self.users: dict[int, JSON] = {}
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, JSON] = {}
        self.messages: dict[int, JSON] = {}
        self.dm_channel_by_user: dict[int, int] = {}
        self.add_user(bot_id, bot_name, bot=True)
        self.add_user(APP_OWNER_ID, "hermes-owner")

    # -- users -------------------------------------------------------------------------------

    def add_user(self, user_id: int, name: str, *, bot: bool = False) -> JSON:
        """Register (or rename) a user and return its user object."""
        user: JSON = {
            "id": str(user_id),
            "username": name,
            "global_name": None if bot else name,
            "discriminator": "0001" if bot else "0",
            "avatar": None,
            "bot": bot,
            "public_flags": 0,
        }
        self.users[user_id] = user
        return user

    def bot_user(self) -> JSON:
        """The bot's user object as READY and /users/@me describe it."""
        return {**self.users[self.bot_id], "verified": True, "mfa_enabled": False, "flags": 0}

    def user(self, user_id: int) -> JSON | None:
        """The user object for an id, or None when the user is unknown."""
        found = self.users.get(user_id)
        return dict(found) if found is not None else None

    # -- guilds, channels, threads ----------------------------------------------------------

    def add_guild(self, guild_id: int, name: str, channels: list[tuple[int, str]]) -> JSON:
        """Create a guild with text channels; the bot is a member. Returns the GUILD_CREATE body."""
        guild = Guild(guild_id=guild_id, name=name)
        self.guilds[guild_id] = guild
        guild.member_joined_at[self.bot_id] = guild.joined_at
        for position, (channel_id, channel_name) in enumerate(channels):
            guild.channel_ids.append(channel_id)
            self.channels[channel_id] = {
                "id": str(channel_id),
                "type": CHANNEL_TYPE_GUILD_TEXT,
                "guild_id": str(guild_id),
                "name": channel_name,
                "position": position,
                "permission_overwrites": [],
                "parent_id": None,
                "topic": None,
                "nsfw": False,
                "rate_limit_per_user": 0,
                "last_message_id": None,
            }
        return self.guild_create_payload(guild_id)

    def add_thread(self, guild_id: int, parent_channel_id: int, thread_id: int, name: str) -> JSON:
        """Create a public thread under a text channel and return its channel object."""
        guild = self.guilds[guild_id]
        if parent_channel_id not in guild.channel_ids:
            raise KeyError(f"channel {parent_channel_id} is not a text channel of guild {guild_id}")
        now = iso_now()
        thread: JSON = {
            "id": str(thread_id),
            "type": CHANNEL_TYPE_PUBLIC_THREAD,
            "guild_id": str(guild_id),
            "parent_id": str(parent_channel_id),
            "owner_id": str(self.bot_id),
            "name": name,
            "last_message_id": None,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "rate_limit_per_user": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": THREAD_AUTO_ARCHIVE_MINUTES,
                "archive_timestamp": now,
                "locked": False,
                "create_timestamp": now,
            },
        }
        guild.thread_ids.append(thread_id)
        self.channels[thread_id] = thread
        return dict(thread)

    def ensure_dm_channel(self, user_id: int, channel_id: int | None = None) -> JSON:
        """The DM channel between the bot and a user, created on first use."""
        existing = self.dm_channel_by_user.get(user_id)
        if existing is not None:
            return self.channels[existing]
        new_id = channel_id if channel_id is not None else self.snowflakes.next()
        recipient = self.users.get(user_id) or self.add_user(user_id, f"user{user_id}")
        self.channels[new_id] = {
            "id": str(new_id),
            "type": CHANNEL_TYPE_DM,
            "last_message_id": None,
            "recipients": [dict(recipient)],
        }
        self.dm_channel_by_user[user_id] = new_id
        return self.channels[new_id]

    def guild_of_channel(self, channel_id: int) -> int | None:
        """The guild a channel or thread belongs to, None for DMs and unknown channels."""
        channel = self.channels.get(channel_id)
        if channel is None or "guild_id" not in channel:
            return None
        return int(channel["guild_id"])

    def delete_channel(self, channel_id: int) -> JSON:
        """Remove a channel or thread and its messages; returns the channel object it was."""
        channel = self.channels.pop(channel_id)
        for guild in self.guilds.values():
            for ids in (guild.channel_ids, guild.thread_ids):
                if channel_id in ids:
                    ids.remove(channel_id)
        for user_id, dm_id in list(self.dm_channel_by_user.items()):
            if dm_id == channel_id:
                del self.dm_channel_by_user[user_id]
        for message_id, message in list(self.messages.items()):
            if message["channel_id"] == str(channel_id):
                del self.messages[message_id]
        return channel

    def ensure_member(self, guild_id: int, user_id: int) -> None:
        """Make a user a member of a guild (authors of pushed messages join implicitly)."""
        self.guilds[guild_id].member_joined_at.setdefault(user_id, iso_now())

    def member_payload(self, guild_id: int, user_id: int, *, with_user: bool) -> JSON:
        """A guild member object; MESSAGE_CREATE's `member` omits the nested user."""
        member: JSON = {
            "roles": [],
            "joined_at": self.guilds[guild_id].member_joined_at[user_id],
            "nick": None,
            "avatar": None,
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "pending": False,
            "flags": 0,
        }
        if with_user:
            member["user"] = dict(self.users[user_id])
        return member

    def guild_create_payload(self, guild_id: int) -> JSON:
        """The full GUILD_CREATE body: channels, @everyone role, every member, active threads."""
        guild = self.guilds[guild_id]
        members = [
            self.member_payload(guild_id, user_id, with_user=True)
            for user_id in guild.member_joined_at
        ]
        everyone_role = {
            "id": str(guild_id),
            "name": "@everyone",
            "permissions": str(EVERYONE_PERMISSIONS),
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }
        return {
            "id": str(guild_id),
            "name": guild.name,
            "icon": None,
            "owner_id": str(APP_OWNER_ID),
            "unavailable": False,
            "large": False,
            "member_count": len(members),
            "joined_at": guild.joined_at,
            "features": [],
            "roles": [everyone_role],
            "emojis": [],
            "stickers": [],
            "channels": [dict(self.channels[cid]) for cid in guild.channel_ids],
            "threads": [dict(self.channels[tid]) for tid in guild.thread_ids],
            "members": members,
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "preferred_locale": "en-US",
            "premium_tier": 0,
        }

    # -- messages ----------------------------------------------------------------------------

    def create_message(
        self,
        channel_id: int,
        author_id: int,
        content: str,
        *,
        message_id: int | None = None,
        reply_to: JSON | None = None,
        attachments: list[JSON] | None = None,
        nonce: str | int | None = None,
        sent_at: float | None = None,
        stickers: list[JSON] | None = None,
    ) -> JSON:
        """Store a new message in a known channel and return its full message object.

        ``sent_at`` (epoch seconds) is the message's time (its ``timestamp`` and, unless
        ``message_id`` is given, its id's timestamp part); by default the real time.
        """
        guild_id = self.guild_of_channel(channel_id)
        if message_id is not None:
            new_id = message_id
        elif sent_at is not None:
            new_id = self.snowflakes.at(sent_at)
        else:
            new_id = self.snowflakes.next()
        message: JSON = {
            "id": str(new_id),
            "channel_id": str(channel_id),
            "author": dict(self.users[author_id]),
            "content": content,
            "timestamp": iso_now() if sent_at is None else iso_at(sent_at),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": self._mentioned_users(content, guild_id),
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": [],
            "components": [],
            "pinned": False,
            "type": MESSAGE_TYPE_DEFAULT,
            "flags": 0,
        }
        if stickers:
            message["sticker_items"] = stickers
        if nonce is not None:
            message["nonce"] = nonce
        if guild_id is not None:
            self.ensure_member(guild_id, author_id)
            message["guild_id"] = str(guild_id)
            message["member"] = self.member_payload(guild_id, author_id, with_user=False)
        if reply_to is not None:
            message["type"] = MESSAGE_TYPE_REPLY
            message["message_reference"] = reply_to
            referenced_id = int(reply_to["message_id"])
            message["referenced_message"] = self.messages.get(referenced_id)
        self.messages[new_id] = message
        self.channels[channel_id]["last_message_id"] = str(new_id)
        return message

    def _mentioned_users(self, content: str, guild_id: int | None) -> list[JSON]:
        """User objects for every known user mentioned as <@id>, with member data in guilds."""
        mentioned: list[JSON] = []
        seen: set[int] = set()
        for match in _USER_MENTION.finditer(content):
            user_id = int(match.group(1))
            if user_id in seen or user_id not in self.users:
                continue
            seen.add(user_id)
            user = dict(self.users[user_id])
            if guild_id is not None:
                self.ensure_member(guild_id, user_id)
                user["member"] = self.member_payload(guild_id, user_id, with_user=False)
            mentioned.append(user)
        return mentioned

    def edit_message(self, message_id: int, content: str) -> JSON:
        """Change a stored message's content and mark it edited."""
        message = self.messages[message_id]
        message["content"] = content
        message["edited_timestamp"] = iso_now()
        message["mentions"] = self._mentioned_users(content, _guild_of_message(message))
        return message

    def channel_history(
        self,
        channel_id: int,
        *,
        limit: int,
        before: int | None = None,
        after: int | None = None,
        around: int | None = None,
    ) -> list[JSON]:
        """A page of a channel's messages as GET /channels/{id}/messages selects it.

        Newest first whatever the anchor, as Discord answers (discord.py pages with the
        first element after `after` and the last before `before`, and reverses for
        oldest-first): `before` gives the `limit` messages just older than it, `after` the
        `limit` messages just newer than it, `around` up to `limit // 2` on each side plus the
        message itself (so an even limit can give limit + 1), and no anchor the newest `limit`.
        """
        ids = sorted(
            message_id
            for message_id, message in self.messages.items()
            if message["channel_id"] == str(channel_id)
        )
        if around is not None:
            half = limit // 2
            older = [i for i in ids if i < around][-half:] if half else []
            centre = [around] if around in ids else []
            chosen = older + centre + [i for i in ids if i > around][:half]
        elif before is not None:
            chosen = [i for i in ids if i < before][-limit:]
        elif after is not None:
            chosen = [i for i in ids if i > after][:limit]
        else:
            chosen = ids[-limit:]
        return [rest_message_payload(self.messages[i]) for i in reversed(chosen)]


def rest_message_payload(message: JSON) -> JSON:
    """A stored message as REST returns it: `guild_id` and `member` are gateway-only extras."""
    payload = {k: v for k, v in message.items() if k not in _GATEWAY_ONLY_MESSAGE_FIELDS}
    payload["mentions"] = [
        {k: v for k, v in user.items() if k != "member"} for user in message.get("mentions", [])
    ]
    return payload


def _guild_of_message(message: JSON) -> int | None:
    """The guild of a stored message, None for DMs."""
    guild_id = message.get("guild_id")
    return int(guild_id) if guild_id is not None else None
