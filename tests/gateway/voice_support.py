"""Shared pieces of the voice-reply tests: the emulated speech and transcription servers,
the gateway options that point at them, and what every voice message must be."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.runtime.gateway import Gateway
from gateway.sessions.runtime import SessionAddress
from sandbox.speech_api import SpeechEmulator
from sandbox.telegram_voice import SentVoice
from sandbox.transcription_api import TranscriptionEmulator
from tests.gateway.conftest import ALICE

WAIT = 30.0
"""A guard against hangs on a busy machine, not a timing assertion."""
SPOKEN = b"OggS a spoken question"
LONG_ANSWER = " ".join(
    f"Sentence number {n} of a long answer says something worth hearing about the weather."
    for n in range(1, 31)
)
"""About 2,600 characters: three parts at a 1,000-character input limit."""


@pytest.fixture
async def speech() -> AsyncIterator[SpeechEmulator]:
    emulator = SpeechEmulator()
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()


@pytest.fixture
async def whisper() -> AsyncIterator[TranscriptionEmulator]:
    emulator = TranscriptionEmulator()
    await emulator.start()
    emulator.say(SPOKEN, "what is the weather like")
    try:
        yield emulator
    finally:
        await emulator.stop()


def voice_options(
    speech: SpeechEmulator, whisper: TranscriptionEmulator, **tts: Any
) -> dict[str, Any]:
    """Gateway options: Telegram, transcription of voice notes, and the emulated speech API."""
    openai = {"base_url": speech.base_url, "api_key_env": None, "max_chars": 1000}
    openai.update(tts.pop("openai", {}))
    return {
        "media_settings": {"transcription": {"base_url": whisper.base_url}},
        "sections": {"tts": {"provider": "openai", "voice": "auto", "openai": openai, **tts}},
    }


def alice() -> SessionAddress:
    return SessionAddress(f"telegram:{ALICE}", "telegram", str(ALICE), str(ALICE))


async def assistant_texts(gateway: Gateway) -> list[Any]:
    runtime = await gateway.app.sessions.get(alice())
    return [m["content"] for m in runtime.context if m["role"] == "assistant"]


def assert_plays_for_its_duration(voice: SentVoice) -> None:
    assert voice.decoded.container == "ogg"
    assert voice.decoded.codec == "opus"
    assert voice.decoded.sample_rate == 48_000
    assert voice.decoded.channels == 1
    assert voice.duration == max(1, math.ceil(voice.decoded.seconds))
