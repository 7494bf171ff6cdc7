"""Speakable text, its parts, the OGG/Opus encoding and the speech providers' failures."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.config.schema import ConfigError, parse_config
from gateway.media.tts.encode import AudioEncodingFailed, encode_voice, probe_audio
from gateway.media.tts.providers import CommandSpeech, SpeechFailed
from gateway.media.tts.speakable import (
    CODE_PHRASE,
    LINK_PHRASE,
    TABLE_PHRASE,
    speakable_parts,
    speakable_text,
)
from gateway.settings.tts import CommandSpeechSettings
from sandbox.voice_audio import tone_wav


def test_code_blocks_tables_and_links_are_not_read_aloud() -> None:
    text = (
        "## Result\n"
        "Use **this**:\n\n```python\nprint('x')\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "See [the docs](https://example.com/docs) or https://example.com/raw for `more`."
    )
    spoken = speakable_text(text)
    assert "print" not in spoken and "|" not in spoken and "http" not in spoken
    assert CODE_PHRASE in spoken and TABLE_PHRASE in spoken
    assert f"See the docs or {LINK_PHRASE} for more." in spoken
    assert spoken.startswith("Result\nUse this:")


def test_a_long_answer_is_split_between_sentences_within_the_limit() -> None:
    sentences = [f"This is sentence {n} of the answer." for n in range(40)]
    parts = speakable_parts(" ".join(sentences), 200)
    assert all(len(part) <= 200 for part in parts)
    assert all(part.endswith(".") for part in parts)
    assert " ".join(parts) == " ".join(sentences)


@given(st.text(min_size=1, max_size=600), st.integers(min_value=1, max_value=120))
def test_parts_never_exceed_the_limit_and_keep_every_word(text: str, limit: int) -> None:
    parts = speakable_parts(text, limit)
    assert all(0 < len(part) <= limit for part in parts)
    assert "".join("".join(parts).split()) == "".join(speakable_text(text).split())


def test_a_wav_becomes_ogg_opus_48k_mono_that_plays_as_long() -> None:
    clip = encode_voice(tone_wav(2.5, rate=22_050))
    probed = probe_audio(clip.ogg)
    assert (probed.container, probed.codec) == ("ogg", "opus")
    assert (probed.sample_rate, probed.channels) == (48_000, 1)
    assert abs(probed.duration - 2.5) < 0.03
    assert abs(clip.duration - 2.5) < 0.03
    assert 0 < len(clip.waveform) <= 256 and max(clip.waveform) == 255


def test_bytes_that_are_not_audio_are_a_clear_failure() -> None:
    with pytest.raises(AudioEncodingFailed):
        encode_voice(b"this is not audio at all" * 10)


async def test_a_failing_command_is_speech_failed_with_its_error() -> None:
    script = "import sys; sys.stderr.write('no voice named x'); sys.exit(3)"
    speech = CommandSpeech(CommandSpeechSettings(run=[sys.executable, "-c", script]))
    with pytest.raises(SpeechFailed, match="exited 3: no voice named x"):
        await speech.synthesize("hello")


async def test_a_command_outliving_its_timeout_is_killed() -> None:
    script = "import time; time.sleep(600)"
    settings = CommandSpeechSettings(run=[sys.executable, "-c", script], timeout_seconds=0.5)
    with pytest.raises(SpeechFailed, match=r"no audio within 0\.5 s"):
        await CommandSpeech(settings).synthesize("hello")


async def test_a_missing_command_is_speech_failed() -> None:
    speech = CommandSpeech(CommandSpeechSettings(run=["/nonexistent/speaker"]))
    with pytest.raises(SpeechFailed, match="could not run"):
        await speech.synthesize("hello")


def test_an_unknown_tts_key_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"tts\.openai\.voices"):
        parse_config({"tts": {"provider": "openai", "openai": {"voices": "alloy"}}})


def test_an_unknown_voice_mode_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"tts\.voice"):
        parse_config({"tts": {"voice": "sometimes"}})
