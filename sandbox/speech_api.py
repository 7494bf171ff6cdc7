"""A local text-to-speech server in the shape of OpenAI's ``POST /v1/audio/speech`` (what
OpenAI and self-hosted speech servers speak), returning real audio.

JSON body: ``model``, ``input`` (at most 4,096 characters), ``voice``, ``response_format``
(``wav`` or ``pcm``; the answer is a sine tone lasting :data:`SECONDS_PER_CHAR` per character,
so a longer text plays longer). Faults for tests: :meth:`SpeechEmulator.fail` answers the next
requests with an HTTP error, :meth:`SpeechEmulator.hang` never answers them (a timeout).
Every request is kept in :attr:`SpeechEmulator.requests`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web

from sandbox.voice_audio import tone_wav

MAX_INPUT_CHARS = 4096
SECONDS_PER_CHAR = 0.02
"""About 50 characters a second: a spoken sentence of 100 characters plays for 2 s."""
FORMATS = {"wav": "audio/wav", "pcm": "audio/pcm"}


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """One speech request as received."""

    model: str
    voice: str
    text: str
    response_format: str
    authorization: str | None


class SpeechEmulator:
    """Serves ``/v1/audio/speech`` on 127.0.0.1; ``base_url`` ends in ``/v1``."""

    def __init__(self) -> None:
        self.requests: list[SpeechRequest] = []
        self.base_url = ""
        self._failures: list[int] = []
        self._hanging = False
        self._released = asyncio.Event()
        self._runner: web.AppRunner | None = None

    def fail(self, status: int = 500, times: int = 1) -> None:
        """Answer the next ``times`` requests with HTTP ``status``."""
        self._failures.extend([status] * times)

    def hang(self) -> None:
        """Never answer requests from now on (until :meth:`stop`): a provider timeout."""
        self._hanging = True

    async def start(self) -> str:
        """Start on a free port; returns the base URL as the openai SDK takes it."""
        app = web.Application()
        app.router.add_post("/v1/audio/speech", self._speech)
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        """Stop serving (hanging requests are released)."""
        self._released.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        text = body.get("input")
        if not isinstance(text, str) or not text:
            return _error(400, "input is required")
        if len(text) > MAX_INPUT_CHARS:
            return _error(400, f"input is longer than {MAX_INPUT_CHARS} characters")
        response_format = str(body.get("response_format") or "mp3")
        if response_format not in FORMATS:
            return _error(400, f"this server answers wav or pcm, not {response_format}")
        self.requests.append(
            SpeechRequest(
                str(body.get("model")),
                str(body.get("voice")),
                text,
                response_format,
                request.headers.get("Authorization"),
            )
        )
        if self._hanging:
            await self._released.wait()
            return _error(503, "stopped")
        if self._failures:
            return _error(self._failures.pop(0), "speech engine failure")
        audio = tone_wav(max(0.3, len(text) * SECONDS_PER_CHAR))
        if response_format == "pcm":
            audio = audio[44:]
        return web.Response(body=audio, content_type=FORMATS[response_format])


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error"}}, status=status
    )
