"""Voice notes as text: an OpenAI-compatible ``/audio/transcriptions`` endpoint (the ``openai``
SDK speaks it; a local whisper server serves it), when ``media.transcription`` names one."""

from __future__ import annotations

import os

import openai

from gateway.settings.media import TranscriptionSettings

TRANSCRIPTION_TIMEOUT_SECONDS = 120.0
"""One transcription call; a minute-long voice note takes seconds on a local server."""
TRANSCRIPTION_RETRIES = 1
"""The SDK's own retry of a failed call (the only retry layer here)."""
NO_KEY = "not-needed"
"""What the SDK is given when the endpoint needs no key (a local server)."""


class TranscriptionFailed(Exception):
    """The endpoint could not turn the audio into text."""


class Transcriber:
    """Turns audio bytes into text through the configured endpoint."""

    def __init__(self, settings: TranscriptionSettings) -> None:
        if settings.base_url is None:
            raise ValueError("transcription is not configured (media.transcription.base_url)")
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        self._model = settings.model
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=key or NO_KEY,
            timeout=TRANSCRIPTION_TIMEOUT_SECONDS,
            max_retries=TRANSCRIPTION_RETRIES,
        )

    async def transcribe(self, data: bytes, file_name: str) -> str:
        """The spoken text; raises :class:`TranscriptionFailed`."""
        try:
            result = await self._client.audio.transcriptions.create(
                model=self._model, file=(file_name, data)
            )
        except openai.OpenAIError as exc:
            raise TranscriptionFailed(type(exc).__name__) from exc
        return result.text.strip()

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
