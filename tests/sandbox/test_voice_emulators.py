"""The emulators take voice messages only as the platforms show them: Telegram's ``sendVoice``
wants OGG/Opus and a duration; Discord's voice messages want the flag, one OGG/Opus attachment
with ``duration_secs`` and ``waveform``, and no text. The speech endpoint answers real audio."""

from __future__ import annotations

import base64
import io
import json
import wave
from collections.abc import AsyncIterator

import aiohttp
import av
import pytest
from telegram import Bot
from telegram.error import BadRequest

from sandbox.discord_api import DiscordEmulator
from sandbox.discord_voice import (
    ERROR_VOICE_CONTENT,
    ERROR_VOICE_FORBIDDEN,
    ERROR_VOICE_METADATA,
    VOICE_MESSAGE_FLAG,
)
from sandbox.speech_api import SpeechEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.voice_audio import check_voice_upload, tone_wav

ALICE = 42
CHANNEL = 700000000000000010


def ogg_opus(seconds: float) -> bytes:
    """Real OGG/Opus, made with PyAV on its own (not the gateway's encoder)."""
    out = io.BytesIO()
    with av.open(io.BytesIO(tone_wav(seconds)), "r") as source, av.open(out, "w", "ogg") as sink:
        stream = sink.add_stream("libopus", rate=48_000, layout="mono")
        resampler = av.AudioResampler(format="s16", layout="mono", rate=48_000)
        for frame in [*source.decode(audio=0), None]:
            for resampled in resampler.resample(frame):
                resampled.pts = None
                for packet in stream.encode(resampled):
                    sink.mux(packet)
        for packet in stream.encode(None):
            sink.mux(packet)
    return out.getvalue()


@pytest.fixture
async def telegram() -> AsyncIterator[TelegramEmulator]:
    emulator = TelegramEmulator()
    await emulator.start()
    emulator.push_message(ALICE, "hello")  # opens the private chat
    try:
        yield emulator
    finally:
        await emulator.stop()


async def test_telegram_shows_ogg_opus_with_a_duration_as_a_voice_bubble(
    telegram: TelegramEmulator,
) -> None:
    audio = ogg_opus(1.5)
    async with Bot(telegram.token, base_url=telegram.base_url) as bot:
        sent = await bot.send_voice(ALICE, audio, duration=2, caption="the text")
        with pytest.raises(BadRequest, match=r"(?i)wrong file type"):
            await bot.send_voice(ALICE, tone_wav(1.0), duration=1)
        with pytest.raises(BadRequest, match=r"(?i)duration is required"):
            await bot.send_voice(ALICE, audio)
    assert sent.voice is not None and sent.voice.duration.total_seconds() == 2
    assert sent.caption == "the text"
    [voice] = telegram.voices.sent
    assert voice.audio == audio and abs(voice.decoded.seconds - 1.5) < 0.03


@pytest.fixture
async def discord_emulator() -> AsyncIterator[DiscordEmulator]:
    emulator = DiscordEmulator()
    emulator.add_guild(700000000000000001, "lab", [(CHANNEL, "general")])
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()


async def _post_voice(
    emulator: DiscordEmulator, audio: bytes, attachment: dict[str, object], content: str = ""
) -> tuple[int, dict[str, object]]:
    payload = {"content": content, "flags": VOICE_MESSAGE_FLAG, "attachments": [attachment]}
    form = aiohttp.FormData()
    form.add_field("payload_json", json.dumps(payload), content_type="application/json")
    form.add_field("files[0]", audio, filename="voice.ogg", content_type="audio/ogg")
    url = f"{emulator.api_base_url}/channels/{CHANNEL}/messages"
    headers = {"Authorization": f"Bot {emulator.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=form, headers=headers) as r,
    ):
        return r.status, await r.json()


async def test_discord_takes_a_voice_message_only_as_discord_does(
    discord_emulator: DiscordEmulator,
) -> None:
    audio = ogg_opus(2.0)
    metadata = {"id": 0, "filename": "voice.ogg", "duration_secs": 2.0, "waveform": "AAAA"}
    status, message = await _post_voice(discord_emulator, audio, metadata)
    assert status == 200 and message["flags"] == VOICE_MESSAGE_FLAG
    with_text = await _post_voice(discord_emulator, audio, metadata, content="hello")
    assert with_text[0] == 400 and with_text[1]["code"] == ERROR_VOICE_CONTENT
    bare = {"id": 0, "filename": "voice.ogg"}
    assert (await _post_voice(discord_emulator, audio, bare))[1]["code"] == ERROR_VOICE_METADATA
    discord_emulator.rest.voice_forbidden_channels.add(CHANNEL)
    refused = await _post_voice(discord_emulator, audio, metadata)
    assert refused[0] == 403 and refused[1]["code"] == ERROR_VOICE_FORBIDDEN
    [voice] = discord_emulator.rest.voice_messages
    assert voice.waveform == base64.b64decode("AAAA") and abs(voice.decoded.seconds - 2.0) < 0.03


async def test_the_speech_endpoint_answers_real_audio_as_long_as_the_text() -> None:
    speech = SpeechEmulator()
    await speech.start()
    try:
        async with aiohttp.ClientSession() as session:
            body = {
                "model": "tts-1",
                "voice": "alloy",
                "input": "x" * 100,
                "response_format": "wav",
            }
            async with session.post(f"{speech.base_url}/audio/speech", json=body) as response:
                audio = await response.read()
    finally:
        await speech.stop()
    assert response.status == 200
    with wave.open(io.BytesIO(audio)) as reader:
        assert abs(reader.getnframes() / reader.getframerate() - 2.0) < 0.01
    with pytest.raises(Exception, match="OGG"):
        check_voice_upload(audio)
