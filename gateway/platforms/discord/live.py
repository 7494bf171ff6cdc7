"""Live replies on Discord: a message sent when the answer starts, then edited as it grows.

Discord allows about five edits per five seconds in a channel; one edit a second keeps a
reply within it while other replies share the channel. Every call goes through discord.py's
HTTP client, so its per-route rate-limit buckets see them all.
"""

from __future__ import annotations

import warnings

from gateway.platforms.base import DeliveryTarget, LiveMode, PlatformAdapter
from gateway.platforms.discord.settings import DiscordSettings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # discord.py imports audioop on 3.11
    import discord

EDIT_SECONDS = 1.0
"""Between two edits of a live reply (the channel's edit bucket is about 5 per 5 s)."""
UNKNOWN_MESSAGE = 10008
"""Discord's error code for a message that does not exist (any more)."""


class DiscordLiveReplies(PlatformAdapter):
    """The live-reply calls of :class:`~gateway.platforms.discord.adapter.DiscordAdapter`."""

    settings: DiscordSettings
    client: discord.Client

    def live_mode(self, target: DeliveryTarget) -> LiveMode | None:
        """One edited message per part everywhere (Discord has no drafts)."""
        return LiveMode(drafts=False, interval=EDIT_SECONDS) if self.settings.streaming else None

    def _message(self, target: DeliveryTarget, message_id: str) -> discord.PartialMessage:
        channel = self.client.get_partial_messageable(int(target.chat_id))
        return channel.get_partial_message(int(message_id))

    async def send_preview(self, target: DeliveryTarget, text: str) -> str:
        """Send the unfinished part (Discord renders Markdown as it comes)."""
        channel = self.client.get_partial_messageable(int(target.chat_id))
        sent = await channel.send(text)
        return str(sent.id)

    async def edit_part(
        self, target: DeliveryTarget, message_id: str, text: str, *, formatted: bool
    ) -> None:
        """PATCH the message's content (Discord formats the Markdown itself either way)."""
        await self._message(target, message_id).edit(content=text)

    async def delete_part(self, target: DeliveryTarget, message_id: str) -> None:
        try:
            await self._message(target, message_id).delete()
        except discord.NotFound:
            return
