"""Voice replies counted, capped and forgotten: spoken characters and their cost in ``/usage``,
``hermes usage`` and ``/metrics``, the daily cap, and ``/forget`` (real daemon core, real
python-telegram-bot, the emulators)."""

from __future__ import annotations

import argparse
import hashlib
from datetime import UTC, datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.cli.users import usage_command
from gateway.config.prices import chat_model_info
from gateway.config.schema import hermes_home
from gateway.dashboard.metrics import metrics_text
from gateway.media.blobs import BlobStore
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.speech_api import SpeechEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.transcription_api import TranscriptionEmulator
from tests.gateway.conftest import (
    ALICE,
    GatewayFactory,
    all_quiet,
)
from tests.gateway.voice_support import (
    SPOKEN,
    WAIT,
    speech,
    voice_options,
    whisper,
)

__all__ = ["speech", "whisper"]  # fixtures


async def test_spoken_characters_and_their_cost_are_in_usage(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    options = voice_options(speech, whisper, openai={"usd_per_million_chars": 30.0})
    async with run_gateway(telegram=telegram, **options) as gateway:
        telegram.push_voice(ALICE, SPOKEN)
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        await all_quiet(gateway, telegram)
        telegram.push_message(ALICE, "/usage")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        await all_quiet(gateway, telegram)
    chars = sum(len(request.text) for request in speech.requests)
    line = f"openai: 1 answers, {chars:,} characters spoken, ${chars * 30 / 1e6:.4f}"
    assert f"today (UTC), {line}" in sent[-1]["text"]
    assert f"this month, {line}" in sent[-1]["text"]


async def test_past_the_daily_cap_answers_are_text_with_a_note(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    options = voice_options(speech, whisper, max_chars_per_user_per_day=60)
    async with run_gateway(telegram=telegram, **options) as gateway:
        telegram.push_voice(ALICE, SPOKEN)
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        await all_quiet(gateway, telegram)
        telegram.push_voice(ALICE, SPOKEN)
        sent = await telegram.wait_for_sent(ALICE, 3, timeout=WAIT)
        await all_quiet(gateway, telegram)
    assert len(telegram.voices.sent) == 1
    assert len(speech.requests) == 1
    assert sent[1]["text"] == anthropic.requests[1].reply_text
    assert sent[2]["text"].startswith("(No voice reply: today's limit")


async def test_forget_deletes_the_voice_audio_and_the_spoken_characters(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
) -> None:
    async with run_gateway(telegram=telegram, **voice_options(speech, whisper)) as gateway:
        telegram.push_voice(ALICE, SPOKEN)
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        await all_quiet(gateway, telegram)
        [voice] = telegram.voices.sent
        blobs = BlobStore(hermes_home() / "media")
        kept = blobs.path(hashlib.sha256(voice.audio).hexdigest())
        assert kept.exists()
        telegram.push_message(ALICE, "/forget")
        await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        telegram.push_message(ALICE, "/forget confirm")
        await telegram.wait_for_sent(ALICE, 3, timeout=WAIT)
        await all_quiet(gateway, telegram)
        spoken = await gateway.app.repo.speech_totals(datetime(2000, 1, 1, tzinfo=UTC))
    assert not kept.exists()
    assert spoken == []


async def test_hermes_usage_and_metrics_count_the_spoken_characters(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    speech: SpeechEmulator,
    whisper: TranscriptionEmulator,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with run_gateway(telegram=telegram, **voice_options(speech, whisper)) as gateway:
        telegram.push_voice(ALICE, SPOKEN)
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        await all_quiet(gateway, telegram)
        config = gateway.app.config
        exposition = await metrics_text(
            gateway.app.repo, chat_model_info(config, config.model.name)
        )
    await usage_command(config, argparse.Namespace(by="user", days=1))
    chars = sum(len(request.text) for request in speech.requests)
    cost = chars * 15 / 1e6
    samples = {
        (s.name, tuple(s.labels.items())): s.value
        for family in text_string_to_metric_families(exposition.decode())
        for s in family.samples
    }
    provider = (("provider", "openai"),)
    assert samples[("hermes_speech_characters_total", provider)] == chars
    assert samples[("hermes_speech_answers_total", provider)] == 1
    assert samples[("hermes_speech_cost_usd_total", provider)] == pytest.approx(cost)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split() for line in lines if line.startswith("openai ")] == [
        ["openai", "1", f"{chars:,}", f"${cost:.4f}"]
    ]
