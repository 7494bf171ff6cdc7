"""A local speech-to-text server in the shape of OpenAI's ``POST /v1/audio/transcriptions``
(what a local whisper server speaks), so voice-note handling runs end to end offline.

Multipart form: ``file`` (the audio) and ``model``; the answer is ``{"text": ...}``: the text
registered for those exact bytes with :meth:`TranscriptionEmulator.say`, else a fixed phrase
naming the byte count. Every request is kept in :attr:`TranscriptionEmulator.requests`.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True, slots=True)
class TranscriptionRequest:
    """One transcription request as received."""

    model: str
    file_name: str
    audio: bytes


class TranscriptionEmulator:
    """Serves ``/v1/audio/transcriptions`` on 127.0.0.1; ``base_url`` ends in ``/v1``."""

    def __init__(self) -> None:
        self.requests: list[TranscriptionRequest] = []
        self.base_url = ""
        self._texts: dict[bytes, str] = {}
        self._runner: web.AppRunner | None = None

    def say(self, audio: bytes, text: str) -> None:
        """Answer ``text`` for these exact audio bytes."""
        self._texts[audio] = text

    async def start(self) -> str:
        """Start on a free port; returns the base URL as the openai SDK takes it."""
        app = web.Application(client_max_size=30 * 1024 * 1024)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()

    async def _transcribe(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            body = {"error": {"message": "file is required", "type": "invalid_request_error"}}
            return web.json_response(body, status=400)
        audio = upload.file.read()
        self.requests.append(TranscriptionRequest(str(form.get("model")), upload.filename, audio))
        text = self._texts.get(audio, f"a voice note of {len(audio)} bytes")
        return web.json_response({"text": text})
