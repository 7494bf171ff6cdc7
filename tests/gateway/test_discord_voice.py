"""Voice replies on Discord: voice messages (flag, duration, waveform, OGG/Opus) through the real
discord.py client and the Discord emulator, which checks them as Discord does; an audio
attachment where a channel refuses voice messages."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.discord_voice import VOICE_MESSAGE_FLAG
from sandbox.speech_api import SpeechEmulator
from tests.gateway.conftest import GENERAL_ID, GUILD_ID, GatewayFactory, all_quiet

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

DM_ID = 700000000000000030
ALICE_ID = 1001
WAIT = 30.0
"""A guard against hangs on a busy machine, not a timing assertion."""


@pytest.fixture
async def speech() -> AsyncIterator[SpeechEmulator]:
    emulator = SpeechEmulator()
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()


def tts(speech: SpeechEmulator) -> dict[str, dict[str, object]]:
    openai = {"base_url": speech.base_url, "api_key_env": None}
    return {"tts": {"provider": "openai", "voice": "on", "openai": openai}}


async def test_an_answer_is_a_voice_message_then_its_text(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
) -> None:
    async with run_gateway(discord=discord_emulator, sections=tts(speech)) as gateway:
        discord_emulator.push_message(DM_ID, "say it out loud", author_id=ALICE_ID)
        await discord_emulator.wait_for_sent(DM_ID, 2, timeout=WAIT)
        await all_quiet(gateway)
    sent = discord_emulator.sent_messages(DM_ID)
    answer = anthropic.requests[0].reply_text
    [voice] = discord_emulator.rest.voice_messages
    # Text first when the answer was shown live while written, else the voice message first.
    [message] = [m for m in sent if m["id"] == voice.message_id]
    [text] = [m for m in sent if m["id"] != voice.message_id]
    assert message["flags"] & VOICE_MESSAGE_FLAG
    assert message["content"] == ""
    assert (voice.decoded.container, voice.decoded.codec) == ("ogg", "opus")
    assert voice.decoded.channels == 1 and voice.decoded.sample_rate == 48_000
    assert abs(voice.decoded.seconds - voice.duration_secs) < 0.05
    assert 0 < len(voice.waveform) <= 256
    assert base64.b64decode(message["attachments"][0]["waveform"]) == voice.waveform
    assert text["content"] == answer


async def test_a_channel_refusing_voice_messages_gets_the_audio_as_an_attachment(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
) -> None:
    discord_emulator.rest.voice_forbidden_channels.add(GENERAL_ID)
    async with run_gateway(discord=discord_emulator, sections=tts(speech)) as gateway:
        discord_emulator.push_message(
            GENERAL_ID, "read this to us", guild_id=GUILD_ID, mention_bot=True
        )
        await discord_emulator.wait_for_sent(GENERAL_ID, 2, timeout=WAIT)
        await all_quiet(gateway)
    assert discord_emulator.rest.voice_messages == []
    # Text first when the answer was shown live while written, else the audio first.
    sent = discord_emulator.sent_messages(GENERAL_ID)
    [audio_message] = [m for m in sent if m["attachments"]]
    [text] = [m for m in sent if not m["attachments"]]
    [audio] = audio_message["attachments"]
    assert audio["filename"].endswith(".ogg") and audio["size"] > 1000
    assert not audio_message.get("flags", 0) & VOICE_MESSAGE_FLAG
    assert text["content"] == anthropic.requests[0].reply_text
