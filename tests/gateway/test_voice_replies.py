"""Voice replies on Telegram: the real daemon core, python-telegram-bot, and the emulators.

The Telegram emulator decodes every ``sendVoice`` upload (OGG container, Opus stream, a
``duration``) and refuses anything else; the speech endpoint is an emulated OpenAI
``/v1/audio/speech`` answering real audio, or a real local engine (espeak-ng).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gateway.commands.voice import NO_PROVIDER_TEXT
from gateway.config.schema import Config
from gateway.delivery.deliverer import VOICE_REFUSED_TEXT
from gateway.media.blobs import BlobStore
from gateway.media.tts.encode import VoiceClip, encode_voice
from gateway.messages.inbound import InboundMessage
from gateway.runtime.app import open_app
from gateway.store.records import VoiceAudio
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.speech_api import SpeechEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.transcription_api import TranscriptionEmulator
from sandbox.voice_audio import tone_wav
from tests.gateway.conftest import (
    ALICE,
    GatewayFactory,
    all_quiet,
    gateway_config,
    settled_inbound,
)
from tests.gateway.voice_support import (
    LONG_ANSWER,
    SPOKEN,
    WAIT,
    assert_plays_for_its_duration,
    assistant_texts,
    speech,
    voice_options,
    whisper,
)

__all__ = ["speech", "whisper"]  # fixtures


async def test_auto_answers_a_voice_note_with_a_voice_bubble_and_its_text_and_a_text_with_text(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    async with run_gateway(telegram=telegram, **voice_options(speech, whisper)) as gateway:
        telegram.push_message(ALICE, "/voice auto")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        update = telegram.push_voice(ALICE, SPOKEN)
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
        telegram.push_message(ALICE, "and tomorrow?")
        sent = await telegram.wait_for_sent(ALICE, 3, timeout=WAIT)
        await all_quiet(gateway, telegram)
        stored = await assistant_texts(gateway)
    answer = anthropic.requests[0].reply_text
    [voice] = telegram.voices.sent
    assert_plays_for_its_duration(voice)
    assert voice.caption == answer  # the text rides along as the caption
    assert sent[1]["kind"] == "voice" and sent[1]["message_id"] == voice.message_id
    assert record.status == "done"
    assert record.reply_platform_ids == (str(voice.message_id),)
    assert "voice" not in sent[2] and sent[2]["text"].startswith("Noted: and tomorrow?")
    assert stored == [answer, anthropic.requests[1].reply_text]  # text only, once each
    assert [r.text for r in speech.requests] == [answer.strip()]


async def test_on_speaks_a_long_answer_in_parts_then_sends_its_text(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    anthropic.reply_fn = lambda body: LONG_ANSWER
    async with run_gateway(telegram=telegram, **voice_options(speech, whisper)) as gateway:
        telegram.push_message(ALICE, "/voice on")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        telegram.push_message(ALICE, "tell me everything")
        await all_quiet(gateway, telegram)
        stored = await assistant_texts(gateway)
    sent = telegram.sent_messages(ALICE)[1:]
    voices = telegram.voices.sent
    assert len(voices) == 3
    assert all(len(r.text) <= 1000 and r.text.endswith(".") for r in speech.requests)
    assert " ".join(r.text for r in speech.requests) == LONG_ANSWER
    for voice in voices:
        assert_plays_for_its_duration(voice)
        assert voice.caption == ""
    assert [m.get("kind") for m in sent] == ["voice", "voice", "voice", None]
    assert sent[3]["text"] == LONG_ANSWER
    assert stored == [LONG_ANSWER]


@pytest.mark.parametrize("fault", ["error", "timeout"])
async def test_a_failing_speech_provider_still_delivers_the_text_with_a_note(
    fault: str,
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    if fault == "error":
        speech.fail(500)
    else:
        speech.hang()
    options = voice_options(speech, whisper, openai={"timeout_seconds": 1})
    async with run_gateway(telegram=telegram, **options) as gateway:
        update = telegram.push_voice(ALICE, SPOKEN)
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
        await all_quiet(gateway, telegram)
        stored = await assistant_texts(gateway)
    answer = anthropic.requests[0].reply_text
    assert telegram.voices.sent == []
    assert [m["text"] for m in telegram.sent_messages(ALICE)] == [
        answer,
        sent[1]["text"],
    ]
    assert sent[1]["text"].startswith("(No voice reply this time:")
    assert record.status == "done"
    assert stored == [answer]
    assert len(speech.requests) == 1


async def test_the_command_provider_speaks_through_a_real_local_engine(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    options = voice_options(speech, whisper)
    options["sections"]["tts"].update(
        provider="command", command={"run": ["espeak-ng", "--stdout"], "timeout_seconds": 60}
    )
    async with run_gateway(telegram=telegram, **options) as gateway:
        telegram.push_voice(ALICE, SPOKEN)
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        await all_quiet(gateway, telegram)
    [voice] = telegram.voices.sent
    assert_plays_for_its_duration(voice)
    assert voice.decoded.seconds > 1.0  # espeak-ng reads a whole sentence
    assert voice.caption == anthropic.requests[0].reply_text
    assert speech.requests == []


async def test_a_restart_keeps_each_chats_voice_setting(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    options = voice_options(speech, whisper, voice="off")
    async with run_gateway(telegram=telegram, **options) as gateway:
        telegram.push_message(ALICE, "/voice on")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        await all_quiet(gateway, telegram)
    async with run_gateway(telegram=telegram, **options) as gateway:
        telegram.push_message(ALICE, "a typed question")
        await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        await all_quiet(gateway, telegram)
    [voice] = telegram.voices.sent
    assert_plays_for_its_duration(voice)
    assert voice.caption.startswith("Noted: a typed question")


async def crashed_voice_reply(
    config: Config, inbound_id: str, clips: list[VoiceClip], text: str
) -> None:
    """The store as a run that died after the first voice part of its reply left it."""
    async with open_app(config) as app:
        key = f"telegram:{ALICE}"
        message = InboundMessage(
            platform="telegram",
            chat_id=str(ALICE),
            user_id=str(ALICE),
            text="speak to me",
            platform_message_id=inbound_id,
            session_key=key,
        )
        await app.repo.record_inbound(
            "telegram",
            inbound_id,
            session_key=key,
            chat_id=str(ALICE),
            user_id=str(ALICE),
            text=message.text,
            payload=message.to_payload(),
        )
        blobs = BlobStore(config.media.blob_path())
        voices = {
            n: VoiceAudio(blobs.put(clip.ogg), clip.duration, clip.waveform_b64)
            for n, clip in enumerate(clips)
        }
        parts = [""] * len(clips) + [text]
        reply = await app.repo.plan_reply(
            "telegram", [inbound_id], parts, session_key=key, chat_id=str(ALICE), voices=voices
        )
        await app.repo.record_sent_part(reply.id, 0, "1")


async def test_a_voice_reply_cut_off_by_a_crash_sends_only_its_missing_parts(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
    tmp_path: Path,
) -> None:
    options = voice_options(speech, whisper)
    update = telegram.push_message(ALICE, "speak to me")
    inbound_id = f"{ALICE}:{update['message']['message_id']}"
    config = gateway_config(tmp_path, anthropic, telegram=telegram, **options)
    clips = [encode_voice(tone_wav(seconds)) for seconds in (1.2, 2.6)]
    await crashed_voice_reply(config, inbound_id, clips, "The answer, in text.")
    async with run_gateway(telegram=telegram, **options) as gateway:
        done = await settled_inbound(gateway, "telegram", inbound_id)
        await all_quiet(gateway, telegram)
    [voice] = telegram.voices.sent
    assert voice.audio == clips[1].ogg
    assert_plays_for_its_duration(voice)
    assert [m["text"] for m in telegram.sent_messages(ALICE)] == ["", "The answer, in text."]
    assert done.status == "done"
    assert anthropic.requests == [] and speech.requests == []


async def test_a_voice_part_whose_audio_is_gone_becomes_a_note_and_the_text_still_goes_out(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
    tmp_path: Path,
) -> None:
    options = voice_options(speech, whisper)
    update = telegram.push_message(ALICE, "speak to me")
    inbound_id = f"{ALICE}:{update['message']['message_id']}"
    config = gateway_config(tmp_path, anthropic, telegram=telegram, **options)
    clips = [encode_voice(tone_wav(seconds)) for seconds in (1.2, 2.6)]
    await crashed_voice_reply(config, inbound_id, clips, "The answer, in text.")
    missing = hashlib.sha256(clips[1].ogg).hexdigest()
    BlobStore(config.media.blob_path()).path(missing).unlink()
    async with run_gateway(telegram=telegram, **options) as gateway:
        done = await settled_inbound(gateway, "telegram", inbound_id)
        await all_quiet(gateway, telegram)
    assert telegram.voices.sent == []
    assert [m["text"] for m in telegram.sent_messages(ALICE)] == [
        VOICE_REFUSED_TEXT,
        "The answer, in text.",
    ]
    assert done.status == "done"


async def test_a_user_who_accepts_no_voice_messages_gets_the_text(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    telegram.voices.forbidden_chats.add(ALICE)
    async with run_gateway(telegram=telegram, **voice_options(speech, whisper)) as gateway:
        update = telegram.push_voice(ALICE, SPOKEN)
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
        await all_quiet(gateway, telegram)
    assert telegram.voices.sent == []
    assert [m["text"] for m in telegram.sent_messages(ALICE)] == [anthropic.requests[0].reply_text]
    assert record.status == "done"


async def test_without_a_provider_voice_says_so_and_answers_stay_text(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    transcription = {"transcription": {"base_url": whisper.base_url}}
    async with run_gateway(telegram=telegram, media_settings=transcription) as gateway:
        telegram.push_message(ALICE, "/voice on")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        telegram.push_voice(ALICE, SPOKEN)
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        await all_quiet(gateway, telegram)
    assert sent[0]["text"] == NO_PROVIDER_TEXT
    assert telegram.voices.sent == []
    assert sent[1]["text"] == anthropic.requests[0].reply_text
