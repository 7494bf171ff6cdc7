"""Audio from a speech provider (WAV, OGG, MP3, ...) as a voice message: OGG/Opus, 48 kHz mono.

PyAV (FFmpeg with its codecs inside the wheel) decodes whatever the provider returned, resamples
it to 48 kHz mono and encodes it with libopus in an OGG container, the format Telegram shows as
a voice bubble and Discord as a voice message. The same pass measures the duration and a
waveform (Discord's: one byte of loudness per step, at most 256). Encoding is CPU work:
:func:`encode_voice_async` runs it in a worker thread so the event loop never waits on it.
"""

from __future__ import annotations

import asyncio
import base64
import io
from array import array
from dataclasses import dataclass

import av
import av.error

VOICE_SAMPLE_RATE = 48_000
"""Opus runs at 48 kHz; Telegram and Discord expect it."""
VOICE_BIT_RATE = 32_000
"""Speech at 32 kbit/s is clear and small (about 4 KB per second)."""
WAVEFORM_POINTS = 256
"""Discord's waveform is at most 256 bytes."""


class AudioEncodingFailed(Exception):
    """The provider's audio could not be decoded or encoded (no audio stream, corrupt data)."""


@dataclass(frozen=True, slots=True)
class VoiceClip:
    """One encoded voice message: OGG/Opus bytes, how long it plays, and its waveform."""

    ogg: bytes
    duration: float
    """Seconds of audio."""
    waveform: bytes
    """Loudness, one byte (0-255) per step, at most :data:`WAVEFORM_POINTS`."""

    @property
    def waveform_b64(self) -> str:
        """The waveform as Discord's ``waveform`` field takes it."""
        return base64.b64encode(self.waveform).decode("ascii")


def _decoded_frames(audio: bytes) -> list[av.AudioFrame]:
    """Every frame of ``audio``'s first audio stream, as signed 16-bit mono at 48 kHz."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=VOICE_SAMPLE_RATE)
    frames: list[av.AudioFrame] = []
    with av.open(io.BytesIO(audio), mode="r") as container:
        if not container.streams.audio:
            raise AudioEncodingFailed("no audio stream in the provider's answer")
        for frame in container.decode(container.streams.audio[0]):
            frames.extend(resampler.resample(frame))
    frames.extend(resampler.resample(None))
    if not any(frame.samples for frame in frames):
        raise AudioEncodingFailed("the provider's audio has no samples")
    for frame in frames:
        frame.pts = None  # the encoder numbers them afresh
    return frames


def _ogg_opus(frames: list[av.AudioFrame]) -> bytes:
    """``frames`` (s16 mono 48 kHz) encoded as OGG/Opus."""
    out = io.BytesIO()
    with av.open(out, mode="w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=VOICE_SAMPLE_RATE, layout="mono")
        stream.bit_rate = VOICE_BIT_RATE
        for frame in [*frames, None]:
            for packet in stream.encode(frame):
                container.mux(packet)
    return out.getvalue()


def _samples(frames: list[av.AudioFrame]) -> array[int]:
    """The frames' samples as one array of signed 16-bit values."""
    samples: array[int] = array("h")
    for frame in frames:
        samples.frombytes(bytes(frame.planes[0])[: frame.samples * 2])
    return samples


def waveform(samples: array[int], points: int = WAVEFORM_POINTS) -> bytes:
    """Peak loudness of ``samples`` in up to ``points`` equal steps, scaled to 0-255."""
    count = len(samples)
    if count == 0:
        return b""
    steps = min(points, count)
    peaks = []
    for index in range(steps):
        step = samples[index * count // steps : (index + 1) * count // steps]
        peaks.append(max(max(step), -min(step)))
    top = max(peaks) or 1
    return bytes(round(255 * peak / top) for peak in peaks)


def encode_voice(audio: bytes) -> VoiceClip:
    """The provider's ``audio`` (any container FFmpeg reads) as a voice message.

    Raises :class:`AudioEncodingFailed` when it cannot be read or has no audio.
    """
    try:
        frames = _decoded_frames(audio)
        ogg = _ogg_opus(frames)
    except av.error.FFmpegError as exc:
        raise AudioEncodingFailed(f"{type(exc).__name__}: {exc}") from exc
    samples = _samples(frames)
    return VoiceClip(ogg, len(samples) / VOICE_SAMPLE_RATE, waveform(samples))


async def encode_voice_async(audio: bytes) -> VoiceClip:
    """:func:`encode_voice` in a worker thread (FFmpeg releases the GIL while it works)."""
    return await asyncio.to_thread(encode_voice, audio)


@dataclass(frozen=True, slots=True)
class ProbedAudio:
    """What a decoder finds in a file: its container, codec, and the seconds it plays."""

    container: str
    codec: str
    sample_rate: int
    channels: int
    duration: float


def probe_audio(data: bytes) -> ProbedAudio:
    """Decode ``data`` fully and report what it is and how long it plays (emulators, doctor).

    Raises :class:`AudioEncodingFailed` when it is not audio.
    """
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise AudioEncodingFailed("no audio stream")
            stream = container.streams.audio[0]
            samples = sum(frame.samples for frame in container.decode(stream))
            rate = stream.codec_context.sample_rate or VOICE_SAMPLE_RATE
            return ProbedAudio(
                container.format.name,
                stream.codec_context.name,
                rate,
                stream.codec_context.channels,
                samples / rate,
            )
    except av.error.FFmpegError as exc:
        raise AudioEncodingFailed(f"{type(exc).__name__}: {exc}") from exc
