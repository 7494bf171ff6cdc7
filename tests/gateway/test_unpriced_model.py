"""A model no price list knows, with a spending limit: the daemon refuses to start until
``model.prices`` prices it, and then the limit counts its calls and refuses a user over it.

The real daemon core against the Telegram and Anthropic emulators, with a real SQLite store.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway.cli.doctor import run_doctor
from gateway.config.schema import ConfigError, PriceSettings
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.users.access import DAILY_REFUSAL, day_start
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound

LOCAL_MODEL = "my-local-llama"
"""Served by the emulator; unknown to genai-prices and to the model table."""
CAROL = 77
DAILY_LIMIT_USD = 0.001
PRICES = PriceSettings(input_per_mtok=100.0, output_per_mtok=300.0)
"""Dear enough that one short exchange costs more than the daily limit."""


async def _send(gateway: Gateway, telegram: TelegramEmulator, text: str) -> list[str]:
    before = len(telegram.sent_messages(CAROL))
    update = telegram.push_message(CAROL, text, username="carol", first_name="Carol")
    await settled_inbound(gateway, "telegram", message_key(update))
    return [m["text"] for m in telegram.sent_messages(CAROL)[before:]]


async def test_an_unpriced_model_with_a_daily_limit_is_refused_until_model_prices_is_set(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(
        tmp_path,
        anthropic,
        telegram=telegram,
        telegram_settings={"allowed_users": [ALICE, CAROL], "admin_users": [ALICE]},
        model_settings={"name": LOCAL_MODEL},
    )
    config.limits.daily_usd_per_user = DAILY_LIMIT_USD

    with pytest.raises(ConfigError) as refused:
        async with open_app(config):
            pass
    assert f"no known price for model '{LOCAL_MODEL}'; set model.prices" in str(refused.value)
    assert "limits.daily_usd_per_user" in str(refused.value)
    assert anthropic.requests == []

    config.model.prices = PRICES
    replies: dict[str, list[str]] = {}
    async with open_app(config) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            replies["first"] = await _send(gateway, telegram, "one question")
            calls = len(anthropic.requests)
            replies["second"] = await _send(gateway, telegram, "and another")
            assert len(anthropic.requests) == calls  # refused before any model call
            replies["usage"] = await _send(gateway, telegram, "/usage")
            spent = await app.repo.spend_since(day_start(), f"telegram:{CAROL}")
        finally:
            await gateway.stop(grace_seconds=2.0)

    assert spent >= DAILY_LIMIT_USD
    assert replies["first"][-1].startswith("Noted: one question")
    assert replies["second"] == [DAILY_REFUSAL.format(spent=spent, limit=DAILY_LIMIT_USD)]
    cost = re.search(r"Cost: \$([\d.]+)", replies["usage"][-1])
    assert cost is not None and float(cost.group(1)) > 0


async def test_doctor_warns_about_an_unpriced_model_and_fails_when_a_limit_needs_its_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(tmp_path, anthropic, model_settings={"name": LOCAL_MODEL})
    await run_doctor(config)
    warned = f"[warn] model.name: no known price for model '{LOCAL_MODEL}'; set model.prices"
    assert any(line.startswith(warned) for line in capsys.readouterr().out.splitlines())

    config.limits.monthly_usd_total = 10.0
    assert await run_doctor(config) == 1
    failed = f"[FAIL] model.name: no known price for model '{LOCAL_MODEL}'; set model.prices"
    assert any(line.startswith(failed) for line in capsys.readouterr().out.splitlines())

    config.model.prices = PRICES
    await run_doctor(config)
    priced = f"[  ok] model {LOCAL_MODEL}: 128,000 tokens, prices from model.prices"
    assert priced in capsys.readouterr().out.splitlines()
