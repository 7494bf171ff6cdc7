"""The real daemon process speaks through a real local engine (espeak-ng) and keeps each chat's
``/voice`` setting across a restart; checked from outside: every voice message decodes as
OGG/Opus for its stated duration, and the store holds each answer once, as text."""

from __future__ import annotations

import asyncio
import math
import signal
from pathlib import Path

import yaml

from gateway.store.db import open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config
from tests.gateway.test_daemon_kill import START_TIMEOUT, start_daemon, wait_for

ESPEAK = {"run": ["espeak-ng", "--stdout"], "timeout_seconds": 60}


async def _stopped(process: asyncio.subprocess.Process) -> int:
    process.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(process.wait(), 30)


async def test_the_daemon_speaks_with_espeak_and_a_restart_keeps_voice_on(
    telegram: TelegramEmulator, anthropic: AnthropicEmulator, tmp_path: Path
) -> None:
    tts = {"provider": "command", "voice": "off", "command": ESPEAK}
    config = gateway_config(tmp_path, anthropic, telegram=telegram, sections={"tts": tts})
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    log_path = tmp_path / "daemon.log"
    first = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: telegram.calls_of("getUpdates"), START_TIMEOUT)
        telegram.push_message(ALICE, "/voice on")
        await telegram.wait_for_sent(ALICE, 1, timeout=START_TIMEOUT)
        telegram.push_message(ALICE, "read me the first answer")
        await telegram.wait_for_sent(ALICE, 2, timeout=START_TIMEOUT)
    finally:
        first_code = await _stopped(first)
    polled = len(telegram.calls_of("getUpdates"))
    second = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: len(telegram.calls_of("getUpdates")) > polled, START_TIMEOUT)
        telegram.push_message(ALICE, "and now the second")
        await telegram.wait_for_sent(ALICE, 3, timeout=START_TIMEOUT)
    finally:
        second_code = await _stopped(second)
    assert (first_code, second_code) == (0, 0), log_path.read_text()
    voices = telegram.voices.sent
    assert len(voices) == 2, log_path.read_text()
    for voice in voices:
        assert (voice.decoded.container, voice.decoded.codec) == ("ogg", "opus")
        assert voice.duration == max(1, math.ceil(voice.decoded.seconds))
        assert voice.decoded.seconds > 1.0
    store = await open_store(config.database.url or "")
    try:
        repo = Repository(store)
        [session] = await repo.list_sessions()
        answers = [m.content for m in await repo.all_messages(session.id) if m.role == "assistant"]
    finally:
        await store.close()
    assert answers == [voice.caption for voice in voices]
    assert answers[0].startswith("Noted: read me the first answer")
    assert answers[1].startswith("Noted: and now the second")
