"""Speaking an answer: its readable text, in parts the provider accepts, each an encoded clip.

The parts are synthesised together (at most :data:`PARALLEL_PARTS` at once), so a long answer
waits about as long as one part, never beyond the provider's timeout per batch; the audio is
encoded to OGG/Opus in worker threads. Any failure of any part is one :class:`SpeechFailed`:
the caller sends the text alone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from gateway.media.tts.encode import AudioEncodingFailed, VoiceClip, encode_voice_async
from gateway.media.tts.providers import SpeechFailed, SpeechProvider
from gateway.media.tts.speakable import speakable_parts

log = logging.getLogger(__name__)

PARALLEL_PARTS = 4
"""Parts synthesised at once: a long answer is not spoken part after part."""
MAX_PARTS = 10
"""A longer answer is not spoken at all (ten messages of audio is not an answer)."""


@dataclass(frozen=True, slots=True)
class SpokenAnswer:
    """An answer's voice messages and what they cost."""

    clips: tuple[VoiceClip, ...]
    chars: int
    """Characters sent to the provider (the readable text, not the markdown)."""
    provider: str
    cost_usd: float


class Speaker:
    """Speaks answers through one provider."""

    def __init__(self, provider: SpeechProvider) -> None:
        self.provider = provider

    def parts(self, text: str) -> list[str]:
        """The readable parts ``text`` would be spoken in (empty: nothing to say)."""
        return speakable_parts(text, self.provider.max_chars)

    def cost(self, chars: int) -> float:
        """What speaking ``chars`` characters costs."""
        return chars * self.provider.usd_per_million_chars / 1_000_000

    async def speak(self, text: str) -> SpokenAnswer:
        """Every part of ``text`` as a clip, in order; raises :class:`SpeechFailed` (also when
        there is nothing readable, or too much)."""
        parts = self.parts(text)
        if not parts:
            raise SpeechFailed("nothing in the answer can be read aloud")
        if len(parts) > MAX_PARTS:
            raise SpeechFailed(f"the answer is too long to speak ({len(parts)} parts)")
        gate = asyncio.Semaphore(PARALLEL_PARTS)

        async def one(part: str) -> VoiceClip:
            async with gate:
                audio = await self.provider.synthesize(part)
            try:
                return await encode_voice_async(audio)
            except AudioEncodingFailed as exc:
                raise SpeechFailed(f"the provider's audio is unreadable ({exc})") from exc

        try:
            async with asyncio.TaskGroup() as group:  # the first failure cancels the rest
                tasks = [group.create_task(one(part)) for part in parts]
        except* SpeechFailed as failed:
            raise failed.exceptions[0] from None
        chars = sum(len(part) for part in parts)
        clips = tuple(task.result() for task in tasks)
        return SpokenAnswer(clips, chars, self.provider.name, self.cost(chars))

    async def probe(self) -> VoiceClip:
        """One word spoken and encoded (``hermes doctor``); raises :class:`SpeechFailed`."""
        audio = await self.provider.synthesize("Hello.")
        try:
            return await encode_voice_async(audio)
        except AudioEncodingFailed as exc:
            raise SpeechFailed(f"the provider's audio is unreadable ({exc})") from exc
