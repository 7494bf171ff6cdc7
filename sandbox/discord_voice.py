"""Voice messages as Discord takes them: message flag ``IS_VOICE_MESSAGE`` (``1 << 13``), one
OGG/Opus attachment whose entry in ``payload_json.attachments`` carries ``duration_secs`` and
``waveform`` (base64 of at most 256 bytes), and no text.

:func:`checked_voice` applies those rules (with Discord's error codes) and decodes the
upload; a channel where voice messages are not allowed answers 403 with code 50173, as Discord
does where the bot lacks the Send Voice Messages permission.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from sandbox.discord_world import JSON
from sandbox.voice_audio import NotVoice, VoiceUpload, check_voice_upload

VOICE_MESSAGE_FLAG = 1 << 13
MAX_WAVEFORM_BYTES = 256
ERROR_VOICE_CONTENT = 50159
"""Voice messages do not support additional content."""
ERROR_VOICE_SINGLE_AUDIO = 50160
"""Voice messages must have a single audio attachment."""
ERROR_VOICE_METADATA = 50161
"""Voice messages must have supporting metadata."""
ERROR_VOICE_FORBIDDEN = 50173
"""Cannot send voice messages in this channel."""


class VoiceMessageRefused(Exception):
    """Discord's answer to a voice message it does not take: HTTP status, code, message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class SentVoiceMessage:
    """A voice message the bot sent: its message, audio, and what a decoder found."""

    message_id: str
    channel_id: int
    duration_secs: float
    waveform: bytes
    audio: bytes
    decoded: VoiceUpload


@dataclass(frozen=True, slots=True)
class VoiceCheck:
    """A voice message request that passed: what it declared and what was decoded."""

    duration_secs: float
    waveform: bytes
    audio: bytes
    decoded: VoiceUpload

    def attachment(self, uploaded: JSON) -> JSON:
        """The uploaded attachment as Discord shows it on a voice message."""
        return {
            **uploaded,
            "content_type": "audio/ogg",
            "duration_secs": self.duration_secs,
            "waveform": base64.b64encode(self.waveform).decode(),
            "flags": VOICE_MESSAGE_FLAG,
        }

    def sent(self, message: JSON) -> SentVoiceMessage:
        """The record of the message this became."""
        return SentVoiceMessage(
            message["id"],
            int(message["channel_id"]),
            self.duration_secs,
            self.waveform,
            self.audio,
            self.decoded,
        )


def checked_voice(
    payload: JSON, files: list[tuple[str, bytes]], *, allowed: bool
) -> VoiceCheck | None:
    """None for a message that is not a voice message; else the checked request.

    ``files``: the (filename, bytes) uploads. Raises :class:`VoiceMessageRefused`."""
    if not int(payload.get("flags") or 0) & VOICE_MESSAGE_FLAG:
        return None
    if not allowed:
        raise VoiceMessageRefused(403, ERROR_VOICE_FORBIDDEN, "Cannot send voice messages here")
    if payload.get("content") or payload.get("embeds"):
        raise VoiceMessageRefused(400, ERROR_VOICE_CONTENT, "No content in voice messages")
    declared = payload.get("attachments") or []
    if len(files) != 1 or len(declared) != 1:
        raise VoiceMessageRefused(400, ERROR_VOICE_SINGLE_AUDIO, "One audio attachment")
    entry = declared[0]
    try:
        duration = float(entry["duration_secs"])
        waveform = base64.b64decode(entry["waveform"], validate=True)
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise VoiceMessageRefused(400, ERROR_VOICE_METADATA, "Missing metadata") from exc
    if duration <= 0 or not waveform or len(waveform) > MAX_WAVEFORM_BYTES:
        raise VoiceMessageRefused(400, ERROR_VOICE_METADATA, "Bad duration or waveform")
    try:
        decoded = check_voice_upload(files[0][1])
    except NotVoice as exc:
        raise VoiceMessageRefused(400, ERROR_VOICE_SINGLE_AUDIO, f"Not OGG/Opus: {exc}") from exc
    return VoiceCheck(duration, waveform, files[0][1], decoded)
