"""Speech providers: text in, audio bytes out (any container the encoder reads).

Two kinds, chosen by ``tts.provider``: an OpenAI-compatible ``/v1/audio/speech`` endpoint
(:class:`OpenAISpeech`) and a command run on this machine (:class:`CommandSpeech`: espeak-ng,
Piper, a script). Every failure, a timeout included, is one :class:`SpeechFailed` whose message
is short and free of the text and of secrets (it is logged and shown to the user).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Final, Literal, Protocol

import openai

from gateway.settings.tts import CommandSpeechSettings, OpenAISpeechSettings, TtsSettings

NO_KEY = "not-needed"
"""What the SDK is given when the endpoint needs no key (a local server)."""
SPEECH_FORMAT: Final[Literal["wav"]] = "wav"
"""Asked of the endpoint: lossless, so the one lossy step is our Opus encoding."""
STDERR_TAIL = 200
"""Characters of a failed command's stderr kept in the error (never the text spoken)."""


class SpeechFailed(Exception):
    """The provider gave no audio: refused, unreachable, timed out, or the command failed."""


class SpeechProvider(Protocol):
    """Turns text into audio."""

    @property
    def name(self) -> str:
        """``openai`` or ``command``, for usage rows and logs."""

    @property
    def max_chars(self) -> int:
        """The most characters one :meth:`synthesize` call accepts."""

    @property
    def usd_per_million_chars(self) -> float:
        """What a million spoken characters cost."""

    async def synthesize(self, text: str) -> bytes:
        """Audio of ``text`` (at most :attr:`max_chars`); raises :class:`SpeechFailed`."""

    async def aclose(self) -> None:
        """Release connections."""


class OpenAISpeech:
    """An OpenAI-compatible speech endpoint through the ``openai`` SDK."""

    name = "openai"

    def __init__(self, settings: OpenAISpeechSettings) -> None:
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        self.settings = settings
        self.max_chars = settings.max_chars
        self.usd_per_million_chars = settings.usd_per_million_chars
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=key or NO_KEY,
            timeout=settings.timeout_seconds,
            max_retries=0,  # a retry would go past the timeout the user waits for at most
        )

    async def synthesize(self, text: str) -> bytes:
        """Audio (WAV) of ``text``; raises :class:`SpeechFailed`."""
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                response = await self._client.audio.speech.create(
                    model=self.settings.model,
                    voice=self.settings.voice,
                    input=text,
                    response_format=SPEECH_FORMAT,
                )
                return response.content
        except TimeoutError as exc:
            raise SpeechFailed(f"no audio within {self.settings.timeout_seconds:g} s") from exc
        except openai.APIStatusError as exc:
            raise SpeechFailed(f"the speech endpoint answered {exc.status_code}") from exc
        except openai.OpenAIError as exc:
            raise SpeechFailed(type(exc).__name__) from exc

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


class CommandSpeech:
    """A local command: the text on its stdin, the audio on its stdout."""

    name = "command"

    def __init__(self, settings: CommandSpeechSettings) -> None:
        self.settings = settings
        self.max_chars = settings.max_chars
        self.usd_per_million_chars = settings.usd_per_million_chars

    async def synthesize(self, text: str) -> bytes:
        """Audio of ``text`` from the command; raises :class:`SpeechFailed` (and kills the
        command) when it fails, prints nothing, or outlives its timeout."""
        program = self.settings.run[0]
        try:
            process = await asyncio.create_subprocess_exec(
                *self.settings.run,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise SpeechFailed(f"{program} could not run: {exc.strerror}") from exc
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                audio, errors = await process.communicate(text.encode("utf-8"))
        except TimeoutError as exc:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise SpeechFailed(
                f"{program} gave no audio within {self.settings.timeout_seconds:g} s"
            ) from exc
        if process.returncode != 0 or not audio:
            tail = errors.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
            raise SpeechFailed(f"{program} exited {process.returncode}: {tail or 'no audio'}")
        return audio

    async def aclose(self) -> None:
        """Nothing to release."""


def speech_provider(settings: TtsSettings) -> SpeechProvider | None:
    """The configured provider, None when ``tts.provider`` is null (no voice replies)."""
    if settings.provider == "openai":
        return OpenAISpeech(settings.openai)
    if settings.provider == "command":
        return CommandSpeech(settings.command)
    return None
