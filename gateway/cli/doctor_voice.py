"""``hermes doctor``'s voice-reply check: the configured speech provider says one word, which is
encoded to OGG/Opus as a voice reply would be (a few characters: the cheapest call that proves
the endpoint or command, the voice and the encoder all work)."""

from __future__ import annotations

import asyncio

from gateway.cli.doctor_probes import FAIL, OK, Check
from gateway.config.schema import Config
from gateway.media.tts.providers import SpeechFailed, speech_provider
from gateway.media.tts.speaker import Speaker


async def voice_checks(config: Config) -> list[Check]:
    """One line: voice replies off, working (with the probe's length), or why they fail."""
    settings = config.tts
    provider = speech_provider(settings)
    if provider is None:
        return [(OK, "voice replies off (tts.provider: null)")]
    timeout = (
        settings.openai.timeout_seconds
        if settings.provider == "openai"
        else settings.command.timeout_seconds
    )
    try:
        async with asyncio.timeout(timeout + 1):
            clip = await Speaker(provider).probe()
    except SpeechFailed as exc:
        return [(FAIL, f"voice replies ({provider.name}): {exc}")]
    except TimeoutError:
        return [(FAIL, f"voice replies ({provider.name}): no audio within {timeout:g} s")]
    finally:
        await provider.aclose()
    return [
        (
            OK,
            f"voice replies ({provider.name}): a test word spoken, {clip.duration:.1f} s of "
            f"OGG/Opus ({len(clip.ogg):,} bytes)",
        )
    ]
