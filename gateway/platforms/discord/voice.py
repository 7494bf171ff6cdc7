"""Voice messages on Discord: an OGG/Opus attachment with the voice-message flag.

Discord shows an attachment as a voice message when the message has flag ``1 << 13``
(``IS_VOICE_MESSAGE``) and the attachment carries ``duration_secs`` and ``waveform``; such a
message has no text, so the answer's text always follows in a message of its own. discord.py has
no call for it, so the request is built with its own multipart helpers and sent through its
HTTP client (same rate limits, same retries). Where the channel does not allow voice messages
(Discord answers 403, or 400 for the flag), the audio is sent again as a plain audio attachment.
"""

from __future__ import annotations

import io
import logging
from typing import Any

import discord
from discord.http import handle_message_parameters

from gateway.platforms.base import DeliveryTarget, VoiceNote

log = logging.getLogger(__name__)

VOICE_FILE_NAME = "voice-message.ogg"
REFUSED_STATUSES = frozenset({400, 403})
"""What Discord answers a voice message in a channel that does not take it (no permission to
send voice messages, or a channel type without them)."""


class VoiceFile(discord.File):
    """An attachment that declares its duration and waveform (a voice message's)."""

    def __init__(self, voice: VoiceNote) -> None:
        super().__init__(io.BytesIO(voice.ogg), filename=VOICE_FILE_NAME)
        self.voice = voice

    def to_dict(self, index: int) -> dict[str, Any]:
        payload = super().to_dict(index)
        payload["duration_secs"] = round(self.voice.duration, 3)
        payload["waveform"] = self.voice.waveform
        return payload


async def send_discord_voice(
    client: discord.Client, target: DeliveryTarget, voice: VoiceNote
) -> str:
    """Send ``voice`` to ``target`` as a voice message, else as an audio attachment; returns
    the message id. Raises discord.py's errors (the adapter classifies them)."""
    channel_id = int(target.chat_id)
    params = handle_message_parameters(
        file=VoiceFile(voice), flags=discord.MessageFlags(voice=True)
    )
    try:
        with params:
            data = await client.http.send_message(channel_id, params=params)
    except discord.HTTPException as exc:
        if exc.status not in REFUSED_STATUSES:
            raise
        log.info(
            "discord: channel %s refused a voice message (%s); sending audio",
            channel_id,
            exc.status,
        )
        channel = client.get_partial_messageable(channel_id)
        sent = await channel.send(
            file=discord.File(io.BytesIO(voice.ogg), filename=VOICE_FILE_NAME)
        )
        return str(sent.id)
    return str(data["id"])
