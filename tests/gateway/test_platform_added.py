"""Adding a platform is one module and one registration (tests/fixtures/memo_platform.py): its
settings become ``platforms.memo`` with defaults and errors that name the key, ``hermes doctor``
checks its token, and the gateway runs its adapter and answers through it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.cli.doctor import run_doctor
from gateway.config.schema import ConfigError, parse_config
from gateway.platforms.registry import PLATFORMS, PlatformSpec
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from tests.fixtures.memo_platform import MemoAdapter, MemoSettings
from tests.gateway.conftest import gateway_config, memo_config


@pytest.fixture(autouse=True)
def memo_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one registration line, on a copy of the registry that the test gives back."""
    monkeypatch.setattr(PLATFORMS, "_specs", dict(PLATFORMS._specs))
    PLATFORMS.register(
        PlatformSpec(
            "memo", "Memo", "tests.fixtures.memo_platform:MemoAdapter", settings_class=MemoSettings
        )
    )


def test_the_registered_platform_has_a_config_section_with_defaults() -> None:
    config = parse_config({"platforms": {"memo": {"room": "kitchen"}}})
    default = parse_config({})

    assert isinstance(config.platforms.memo, MemoSettings)
    assert (config.platforms.memo.room, config.platforms.memo.enabled) == ("kitchen", False)
    assert default.platforms.memo == MemoSettings()
    assert default.platforms.telegram.poll_timeout == 30  # the others are still there


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ({"memo": {"rooom": "x"}}, "platforms.memo.rooom: unknown key (did you mean 'room'?)"),
        ({"memo": {"typing_delay": -1}}, "platforms.memo.typing_delay: must be greater than"),
        ({"mem": {}}, "platforms.mem: unknown key (did you mean 'memo'?)"),
    ],
)
def test_errors_in_its_section_name_the_key(section: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"platforms": section})
    assert str(raised.value).startswith(error)


def test_a_platform_without_settings_of_its_own_gets_the_common_ones() -> None:
    PLATFORMS.register(PlatformSpec("bare", "Bare", "tests.fixtures.memo_platform:MemoAdapter"))

    config = parse_config({"platforms": {"bare": {"enabled": True}}})

    assert config.platforms.bare.token_env == "BARE_BOT_TOKEN"
    assert config.platforms.bare.enabled


async def test_doctor_checks_the_token_of_the_added_platform(
    tmp_path: Path, anthropic: AnthropicEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    config = gateway_config(tmp_path, anthropic)
    config.platforms.memo.enabled = True

    assert await run_doctor(config) == 1
    lines = capsys.readouterr().out.splitlines()

    assert "[FAIL] memo bot token: MEMO_TOKEN is not set (export it or put it in .env)" in lines
    assert "[warn] memo: allowed_users is empty, so everyone is refused" in lines


async def test_the_gateway_answers_through_the_added_platform(
    tmp_path: Path, anthropic: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = memo_config(tmp_path, anthropic, monkeypatch)

    async with open_app(config) as app:
        gateway = Gateway(app)
        await gateway.start()
        try:
            adapter = gateway.adapters["memo"]
            assert isinstance(adapter, MemoAdapter)
            await adapter.say("ann", "hello from the memo room")
            target, reply = await asyncio.wait_for(adapter.sent.get(), 30)
            sessions = await app.repo.list_sessions()
        finally:
            await gateway.stop(grace_seconds=2.0)

    assert (target.chat_id, bool(reply.strip())) == ("lobby", True)
    assert [s.key for s in sessions] == ["memo:lobby"], reply
