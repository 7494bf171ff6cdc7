"""``hermes doctor`` asks the services themselves, without spending tokens: a wrong key, an
endpoint that is down and a rejected bot token each fail with a line that says so."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.doctor import run_doctor
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.speech_api import SpeechEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import DISCORD_TOKEN_ENV, TELEGRAM_TOKEN_ENV, gateway_config


async def _doctor(config: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = await run_doctor(config)
    return code, capsys.readouterr().out.splitlines()


async def test_doctor_passes_against_working_services(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    discord_emulator: DiscordEmulator,
) -> None:
    config = gateway_config(tmp_path, anthropic, telegram=telegram, discord=discord_emulator)
    code, lines = await _doctor(config, capsys)
    assert code == 0, lines
    assert "[  ok] model claude-sonnet-4-5: the key and the endpoint answer (anthropic)" in lines
    assert "[  ok] summary model claude-haiku-4-5: the key and the endpoint answer (anthropic)" in (
        lines
    )
    assert any(line.startswith("[  ok] telegram: the token works (@") for line in lines)
    assert any(line.startswith("[  ok] discord: the token works") for line in lines)
    assert "[  ok] database writable" in lines
    assert anthropic.stats.count_tokens_calls == 2
    assert anthropic.stats.requests == 0  # nothing was spent


async def test_doctor_fails_on_a_wrong_model_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = AnthropicEmulator(api_key="the-right-key")  # the environment holds "test-key"
    await emulator.start()
    try:
        code, lines = await _doctor(gateway_config(tmp_path, emulator), capsys)
    finally:
        await emulator.stop()
    assert code == 1
    assert any(
        line.startswith("[FAIL] model claude-sonnet-4-5: the key was refused") for line in lines
    ), lines
    assert "test-key" not in "\n".join(lines)


async def test_doctor_reports_a_dead_endpoint_as_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], anthropic: AnthropicEmulator
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = gateway_config(
        tmp_path, anthropic, model_settings={"base_url": f"http://127.0.0.1:{port}"}
    )
    code, lines = await _doctor(config, capsys)
    assert code == 1
    assert any(
        line.startswith("[FAIL] model claude-sonnet-4-5: cannot reach the endpoint")
        for line in lines
    ), lines
    assert not any("overloaded" in line for line in lines)


async def test_doctor_fails_on_rejected_bot_tokens(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    discord_emulator: DiscordEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TELEGRAM_TOKEN_ENV, "123456:WRONG")
    monkeypatch.setenv(DISCORD_TOKEN_ENV, "not-the-token")
    config = gateway_config(tmp_path, anthropic, telegram=telegram, discord=discord_emulator)
    code, lines = await _doctor(config, capsys)
    assert code == 1
    assert f"[FAIL] telegram: the bot token in {TELEGRAM_TOKEN_ENV} was rejected" in lines
    assert f"[FAIL] discord: the bot token in {DISCORD_TOKEN_ENV} was rejected" in lines
    assert not any("WRONG" in line or "not-the-token" in line for line in lines)


async def test_doctor_has_the_speech_provider_say_one_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], anthropic: AnthropicEmulator
) -> None:
    speech = SpeechEmulator()
    await speech.start()
    try:
        openai = {"base_url": speech.base_url, "api_key_env": None}
        tts = {"tts": {"provider": "openai", "openai": openai}}
        code, lines = await _doctor(gateway_config(tmp_path, anthropic, sections=tts), capsys)
        speech.fail(401)
        failed, failing = await _doctor(gateway_config(tmp_path, anthropic, sections=tts), capsys)
    finally:
        await speech.stop()
    assert code == 0, lines
    assert any(
        line.startswith("[  ok] voice replies (openai): a test word spoken") for line in lines
    )
    assert [request.text for request in speech.requests] == ["Hello.", "Hello."]
    assert failed == 1
    assert "[FAIL] voice replies (openai): the speech endpoint answered 401" in failing
