"""The platform registry: one spec per settings section, adapters only for enabled platforms."""

from __future__ import annotations

import pytest

from gateway.config.schema import MissingSecretError, PlatformSettings, parse_config
from gateway.platforms.registry import PLATFORMS, PlatformRegistry, PlatformSpec


def test_every_platform_section_of_the_config_is_a_registered_platform_and_back():
    assert PLATFORMS.names() == list(PlatformSettings.model_fields)


def test_no_adapter_is_built_when_no_platform_is_enabled():
    assert PLATFORMS.build_adapters(parse_config({})) == []


def test_an_enabled_platform_without_its_token_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HERMES_TEST_NO_SUCH_TOKEN", raising=False)
    config = parse_config(
        {"platforms": {"discord": {"enabled": True, "token_env": "HERMES_TEST_NO_SUCH_TOKEN"}}}
    )
    assert [spec.name for spec in PLATFORMS.enabled(config)] == ["discord"]
    with pytest.raises(MissingSecretError, match=r"Discord bot token.*HERMES_TEST_NO_SUCH_TOKEN"):
        PLATFORMS.build_adapters(config)


def test_a_platform_registered_twice_is_refused():
    registry = PlatformRegistry()
    spec = PlatformSpec(
        "telegram", "Telegram", "gateway.platforms.telegram.adapter:TelegramAdapter"
    )
    registry.register(spec)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(spec)


def test_secrets_of_every_platform_section_are_masked_in_logs():
    from gateway.config.secrets import configured_secret_env_names

    names = configured_secret_env_names(parse_config({}))
    assert {"TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "DISCORD_BOT_TOKEN"} <= names
