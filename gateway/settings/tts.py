"""The ``tts`` section: whether and how the bot answers with voice messages.

Below the configuration schema, so the speech providers (:mod:`gateway.media.tts`) take it
without importing the whole schema.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from gateway.settings.sections import Section

VoiceMode = Literal["off", "on", "auto"]
"""When a chat is answered with voice: never, always, or when it was spoken to (a voice note)."""
VOICE_MODES: tuple[VoiceMode, ...] = ("off", "on", "auto")

Seconds = Annotated[float, Field(gt=0, le=600)]


class OpenAISpeechSettings(Section):
    """An OpenAI-compatible ``/v1/audio/speech`` endpoint (OpenAI, or a self-hosted server)."""

    base_url: str | None = None
    """The API base as the ``openai`` SDK takes it (None: OpenAI itself)."""
    model: str = "tts-1"
    voice: str = "alloy"
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout_seconds: Seconds = 30.0
    max_chars: Annotated[int, Field(ge=50, le=4096)] = 4096
    """The endpoint's input limit per request (OpenAI: 4,096 characters)."""
    usd_per_million_chars: Annotated[float, Field(ge=0)] = 15.0
    """The price of a million spoken characters (``tts-1``: $15; ``tts-1-hd``: $30)."""


class CommandSpeechSettings(Section):
    """A local engine run as a command: the text on stdin, audio (WAV, OGG, MP3) on stdout."""

    run: list[str] = Field(default_factory=lambda: ["espeak-ng", "--stdout"], min_length=1)
    timeout_seconds: Seconds = 30.0
    max_chars: Annotated[int, Field(ge=50, le=100_000)] = 1000
    usd_per_million_chars: Annotated[float, Field(ge=0)] = 0.0


class TtsSettings(Section):
    """Voice replies: the provider, each chat's default mode, and a daily cap per user."""

    provider: Literal["openai", "command"] | None = None
    """Who speaks (None: no voice replies, ``/voice`` says so)."""
    voice: VoiceMode = "auto"
    """Each chat's mode until ``/voice`` changes it."""
    openai: OpenAISpeechSettings = Field(default_factory=OpenAISpeechSettings)
    command: CommandSpeechSettings = Field(default_factory=CommandSpeechSettings)
    max_chars_per_user_per_day: Annotated[int, Field(ge=0)] | None = 20_000
    """Spoken characters per user per day (UTC); past it answers are text only. None: no cap."""
