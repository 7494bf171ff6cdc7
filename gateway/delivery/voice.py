"""Whether and how an answer is spoken: the chat's ``/voice`` mode, the daily cap, the clips.

:class:`VoiceReplies` decides per turn (``off``: never; ``on``: always; ``auto``: when the
turn was spoken to, a voice note among its messages), checks the user's spoken characters
today against ``tts.max_chars_per_user_per_day``, has the answer spoken, keeps each clip in the
blob folder and counts the characters and their cost. What it returns is what the deliverer
plans: the voice messages, or a short note saying why the answer is text only. The text is
always delivered and stored whatever happens here; a provider that fails or times out costs
the user at most its timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from gateway.media.blobs import BlobStore
from gateway.media.tts.providers import SpeechFailed, speech_provider
from gateway.media.tts.speaker import Speaker
from gateway.messages.inbound import InboundMessage
from gateway.messages.media_items import VOICE
from gateway.platforms.ports import ReplySender
from gateway.settings.media import MediaSettings
from gateway.settings.tts import VOICE_MODES, TtsSettings, VoiceMode
from gateway.store.ports import VoiceStore
from gateway.store.records import VoiceAudio

log = logging.getLogger(__name__)

FAILED_NOTE = "(No voice reply this time: {reason}.)"
CAPPED_NOTE = "(No voice reply: today's limit of spoken characters is reached.)"


@dataclass(frozen=True, slots=True)
class VoicePlan:
    """What a turn's answer is sent with besides its text: voice messages, or a note."""

    voices: tuple[VoiceAudio, ...] = ()
    note: str | None = None
    """Why the answer is text only (provider failed, cap reached)."""


def _today(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def spoken_to(batch: Sequence[InboundMessage]) -> bool:
    """Whether a message of the turn was a voice note."""
    return any(item.kind == VOICE for message in batch for item in message.media)


def user_key_of(message: InboundMessage) -> str | None:
    """``platform:user_id`` of who wrote ``message`` (their usage and cap)."""
    return f"{message.platform}:{message.user_id}" if message.user_id else None


class VoiceReplies:
    """Turns a turn's answer into voice messages when its chat wants them."""

    def __init__(
        self,
        settings: TtsSettings,
        store: VoiceStore,
        blobs: BlobStore,
        speaker: Speaker | None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.blobs = blobs
        self.speaker = speaker
        """None when ``tts.provider`` is null: no answer is spoken."""

    async def mode(self, platform: str, chat_id: str) -> VoiceMode:
        """The chat's ``/voice`` mode, else the configured default."""
        stored = await self.store.voice_mode(platform, chat_id)
        for mode in VOICE_MODES:
            if stored == mode:
                return mode
        return self.settings.voice

    async def set_mode(self, platform: str, chat_id: str, mode: VoiceMode) -> None:
        """Store the chat's mode (it survives restarts)."""
        await self.store.set_voice_mode(platform, chat_id, mode)

    async def wants_voice(self, batch: Sequence[InboundMessage]) -> bool:
        """Whether the turn's answer should be spoken (a provider, and the chat's mode)."""
        if self.speaker is None or not batch:
            return False
        last = batch[-1]
        mode = await self.mode(last.platform, last.chat_id)
        return mode == "on" or (mode == "auto" and spoken_to(batch))

    async def plan(self, batch: Sequence[InboundMessage], text: str) -> VoicePlan | None:
        """The voice messages of ``text`` for the turn ``batch``, a note when they cannot be
        had, None when the turn is not to be spoken (or has nothing to say aloud)."""
        if self.speaker is None or not await self.wants_voice(batch):
            return None
        if not self.speaker.parts(text):
            return None
        last = batch[-1]
        user_key = user_key_of(last)
        if await self._capped(user_key, len(text)):
            return VoicePlan(note=CAPPED_NOTE)
        try:
            spoken = await self.speaker.speak(text)
            voices = tuple(
                VoiceAudio(self.blobs.put(clip.ogg), round(clip.duration, 3), clip.waveform_b64)
                for clip in spoken.clips
            )
        except SpeechFailed as exc:
            log.warning("%s: voice reply failed: %s", last.session_key, exc)
            return VoicePlan(note=FAILED_NOTE.format(reason=str(exc).rstrip(".")))
        except Exception as exc:  # whatever breaks the voice, the text still goes out
            log.exception("%s: voice reply failed unexpectedly", last.session_key)
            return VoicePlan(note=FAILED_NOTE.format(reason=type(exc).__name__))
        await self.store.record_speech(
            user_key=user_key,
            session_key=last.session_key,
            provider=spoken.provider,
            chars=spoken.chars,
            cost_usd=spoken.cost_usd,
        )
        return VoicePlan(voices=voices)

    async def _capped(self, user_key: str | None, wanted: int) -> bool:
        """Whether speaking about ``wanted`` more characters would pass the user's daily cap."""
        cap = self.settings.max_chars_per_user_per_day
        if cap is None or user_key is None:
            return False
        spoken = await self.store.spoken_chars_since(user_key, _today(datetime.now(UTC)))
        return spoken + min(wanted, cap) > cap

    def audio(self, voice: VoiceAudio) -> bytes:
        """The OGG/Opus bytes of a planned voice message."""
        return self.blobs.get(voice.blob)

    async def aclose(self) -> None:
        """Release the provider's connections."""
        if self.speaker is not None:
            await self.speaker.provider.aclose()


def with_voices(
    adapter: ReplySender,
    texts: Sequence[str],
    text_parts: list[str],
    plan: VoicePlan,
    *,
    streamed: bool,
) -> tuple[list[str], dict[int, VoiceAudio]]:
    """The parts of a spoken reply and which of them are voice messages.

    One voice message whose answer fits the platform's caption carries it as its caption;
    otherwise the voice messages come first and the text follows in messages of its own (after
    the text, when the reply was shown live: the text is in the chat already).
    """
    whole = "\n\n".join(texts)
    fits = 0 < adapter.measure(whole) <= adapter.caption_limit
    if len(plan.voices) == 1 and fits and not streamed:
        return [whole], {0: plan.voices[0]}
    captions = [""] * len(plan.voices)
    if streamed:
        start = len(text_parts)
        voices = {start + index: voice for index, voice in enumerate(plan.voices)}
        return [*text_parts, *captions], voices
    return [*captions, *text_parts], dict(enumerate(plan.voices))


def build_voice_replies(
    settings: TtsSettings, media: MediaSettings, store: VoiceStore
) -> VoiceReplies:
    """Voice replies as configured (a provider, the blob folder for the clips)."""
    provider = speech_provider(settings)
    speaker = Speaker(provider) if provider is not None else None
    return VoiceReplies(settings, store, BlobStore(media.blob_path()), speaker)
