"""What the platforms check of an uploaded voice message, and real audio for the speech server.

Telegram shows a ``sendVoice`` upload as a voice bubble only when it is an OGG file with an Opus
stream; Discord's voice messages are the same. :func:`check_voice_upload` decodes the upload
fully with PyAV (independently of the gateway's encoder) and reports the container, codec,
sample rate, channels and the seconds it plays, or raises :class:`NotVoice` with the reason.
:func:`tone_wav` makes real WAV audio for the emulated speech endpoint.
"""

from __future__ import annotations

import io
import math
import struct
import wave
from dataclasses import dataclass

import av
import av.error

OGG_MAGIC = b"OggS"
OPUS_HEAD = b"OpusHead"


class NotVoice(Exception):
    """The upload is not OGG/Opus audio (the reason says what is wrong)."""


@dataclass(frozen=True, slots=True)
class VoiceUpload:
    """An uploaded voice message as a decoder found it."""

    container: str
    codec: str
    sample_rate: int
    channels: int
    seconds: float
    size: int


def check_voice_upload(data: bytes) -> VoiceUpload:
    """Decode ``data`` as a voice message; raises :class:`NotVoice`."""
    if not data.startswith(OGG_MAGIC) or OPUS_HEAD not in data[:200]:
        raise NotVoice("not an OGG container with an Opus stream")
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise NotVoice("no audio stream")
            stream = container.streams.audio[0]
            samples = sum(frame.samples for frame in container.decode(stream))
            rate = stream.codec_context.sample_rate
            upload = VoiceUpload(
                container.format.name,
                stream.codec_context.name,
                rate,
                stream.codec_context.channels,
                samples / rate if rate else 0.0,
                len(data),
            )
    except av.error.FFmpegError as exc:
        raise NotVoice(f"undecodable: {exc}") from exc
    if upload.codec != "opus" or upload.seconds <= 0:
        raise NotVoice(f"codec {upload.codec}, {upload.seconds:.2f} s")
    return upload


def tone_wav(seconds: float, rate: int = 24_000, pitch: float = 440.0) -> bytes:
    """``seconds`` of a sine tone as 16-bit mono WAV (what a speech server could answer)."""
    count = max(1, int(seconds * rate))
    frames = b"".join(
        struct.pack("<h", int(9000 * math.sin(2 * math.pi * pitch * index / rate)))
        for index in range(count)
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(frames)
    return out.getvalue()
