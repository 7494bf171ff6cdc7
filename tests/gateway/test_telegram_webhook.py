"""In webhook mode Telegram POSTs updates to the gateway, and each is answered exactly once.

The real Gateway and python-telegram-bot run against the Telegram emulator, which POSTs every
update to the adapter's webhook server as Telegram does and keeps it queued until it gets a 2xx.
The webhook listens on port 0; the configured URL carries port 0 too, and the adapter tells
Telegram the port it bound.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp
import pytest

from gateway.config.schema import ConfigError
from gateway.platforms.telegram.webhook import SECRET_HEADER, public_webhook_url, webhook_secret
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import (
    ALICE,
    GatewayFactory,
    all_quiet,
    message_key,
    settled_inbound,
    telegram_adapter,
)

SECRET_ENV = "HERMES_TEST_TELEGRAM_WEBHOOK_SECRET"
KNOWN_SECRET = "webhook-secret_for-tests"
WAIT = 10.0
"""The emulator's pause before it POSTs a refused update again (Telegram's is longer)."""
WEBHOOK_SETTINGS: dict[str, Any] = {
    "mode": "webhook",
    "webhook_listen": "127.0.0.1",
    "webhook_port": 0,
    "webhook_url": "http://127.0.0.1:0/telegram",
    "webhook_secret_env": SECRET_ENV,
}
FORGED_UPDATE: dict[str, Any] = {
    "update_id": 900_000_001,
    "message": {
        "message_id": 31337,
        "date": 1_700_000_000,
        "chat": {"id": ALICE, "type": "private", "first_name": "Alice"},
        "from": {"id": ALICE, "is_bot": False, "first_name": "Alice"},
        "text": "forged: transfer everything",
    },
}


@pytest.fixture(autouse=True)
def _no_secret_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)


async def post_status(url: str, body: bytes, secret: str | None) -> int:
    """POST a body to the webhook as anyone could; returns the HTTP status."""
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers[SECRET_HEADER] = secret
    async with aiohttp.ClientSession() as client, client.post(url, data=body, headers=headers) as r:
        return r.status


async def test_private_message_over_the_webhook_is_answered_once_and_stored(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with run_gateway(telegram=telegram, telegram_settings=WEBHOOK_SETTINGS) as gateway:
        adapter = telegram_adapter(gateway)
        update = telegram.push_message(ALICE, "hello over the webhook")
        sent = await telegram.wait_for_sent(ALICE, 1)
        record = await settled_inbound(gateway, "telegram", message_key(update))
        await all_quiet(gateway, telegram)
    registered = telegram.calls_of("setWebhook")
    generated_secret = registered[0]["secret_token"]

    assert len(telegram.sent_messages(ALICE)) == 1
    assert sent[0]["text"].startswith("Noted: hello over the webhook")
    assert len(anthropic.requests) == 1
    assert record.status == "done"
    assert record.reply_platform_ids == (str(sent[0]["message_id"]),)
    assert (
        registered[0]["url"]
        == adapter.webhook_url
        == (f"http://127.0.0.1:{adapter.webhook_port}/telegram")
    )
    assert registered[0]["allowed_updates"] == ["message", "callback_query"]
    assert registered[0]["drop_pending_updates"] is False
    assert len(generated_secret) >= 32
    assert telegram.calls_of("getUpdates") == []  # no polling, hence no watchdog either
    assert "webhook mode" in caplog.text and adapter.webhook_url in caplog.text
    assert generated_secret not in caplog.text


async def test_a_post_without_the_secret_is_refused_and_nothing_is_recorded(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(SECRET_ENV, KNOWN_SECRET)
    caplog.set_level(logging.INFO)
    async with run_gateway(telegram=telegram, telegram_settings=WEBHOOK_SETTINGS) as gateway:
        url = telegram_adapter(gateway).webhook_url
        assert url is not None
        forged = json.dumps(FORGED_UPDATE).encode()
        wrong = await post_status(url, forged, "guessed-secret")
        missing = await post_status(url, forged, None)
        malformed = await post_status(url, b"{not json", KNOWN_SECRET)
        not_an_update = await post_status(url, b'{"hello": "world"}', KNOWN_SECRET)
        record = await gateway.app.repo.get_inbound("telegram", message_key(FORGED_UPDATE))

    assert (wrong, missing, malformed, not_an_update) == (403, 403, 400, 400)
    assert record is None
    assert anthropic.requests == []
    assert telegram.sent_messages() == []
    assert telegram.calls_of("setWebhook")[0]["secret_token"] == KNOWN_SECRET
    assert KNOWN_SECRET not in caplog.text


async def test_an_update_redelivered_after_it_was_acknowledged_is_answered_once(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram, telegram_settings=WEBHOOK_SETTINGS) as gateway:
        update = telegram.push_message(ALICE, "say it once")
        await telegram.wait_for_sent(ALICE, 1)
        telegram.redeliver(update["update_id"])
        await telegram.wait_for_webhook_attempts(2, WAIT, succeeded=True)
        await all_quiet(gateway, telegram)
    delivered = [a.update_id for a in telegram.webhook_attempts if a.succeeded]

    assert delivered == [update["update_id"]] * 2
    assert len(telegram.sent_messages(ALICE)) == 1
    assert len(anthropic.requests) == 1


async def test_an_update_that_could_not_be_recorded_is_refused_then_taken_on_retry(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with run_gateway(telegram=telegram, telegram_settings=WEBHOOK_SETTINGS) as gateway:
        repo = gateway.app.repo
        record_inbound = repo.record_inbound
        failures = [OSError("disk full")]

        async def record_failing_once(*args: Any, **kwargs: Any) -> bool:
            if failures:
                raise failures.pop()
            return await record_inbound(*args, **kwargs)

        monkeypatch.setattr(repo, "record_inbound", record_failing_once)
        update = telegram.push_message(ALICE, "try again")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
        await all_quiet(gateway, telegram)
    statuses = [attempt.status for attempt in telegram.webhook_attempts]

    assert statuses == [500, 200]
    assert record.status == "done"
    assert len(telegram.sent_messages(ALICE)) == 1
    assert sent[0]["text"].startswith("Noted: try again")
    assert len(anthropic.requests) == 1


async def test_updates_sent_while_the_gateway_is_down_are_answered_after_it_starts_again(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram, telegram_settings=WEBHOOK_SETTINGS):
        telegram.push_message(ALICE, "before the restart")
        await telegram.wait_for_sent(ALICE, 1)
    webhook_after_stop = telegram.webhook_url
    later = telegram.push_message(ALICE, "while you were down")
    await telegram.wait_for_webhook_attempts(len(telegram.webhook_attempts) + 1, WAIT)
    while_down = telegram.webhook_info()

    async with run_gateway(telegram=telegram, telegram_settings=WEBHOOK_SETTINGS) as gateway:
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(later))
        await all_quiet(gateway, telegram)

    assert webhook_after_stop != ""
    assert telegram.calls_of("deleteWebhook") == []
    assert while_down["pending_update_count"] == 1
    assert while_down["last_error_message"] == "Connection refused"
    assert len(telegram.sent_messages(ALICE)) == 2
    assert sent[1]["text"].startswith("Noted: while you were down")
    assert record.status == "done"
    assert [r.last_user_text for r in anthropic.requests] == [
        "before the restart",
        "while you were down",
    ]


def test_only_a_port_of_zero_in_the_webhook_url_is_replaced_by_the_bound_port() -> None:
    assert public_webhook_url("http://127.0.0.1:0/telegram", 41234) == (
        "http://127.0.0.1:41234/telegram"
    )
    assert public_webhook_url("https://bot.example.org/tg?x=1", 41234) == (
        "https://bot.example.org/tg?x=1"
    )
    assert public_webhook_url("https://bot.example.org:8443/tg", 41234) == (
        "https://bot.example.org:8443/tg"
    )


def test_the_secret_comes_from_the_environment_or_is_generated_fresh_per_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    generated = {webhook_secret(SECRET_ENV), webhook_secret(SECRET_ENV)}
    monkeypatch.setenv(SECRET_ENV, KNOWN_SECRET)
    from_env = webhook_secret(SECRET_ENV)
    monkeypatch.setenv(SECRET_ENV, "base64+/=")
    with pytest.raises(ConfigError, match=SECRET_ENV) as refused:
        webhook_secret(SECRET_ENV)

    assert len(generated) == 2
    assert from_env == KNOWN_SECRET
    assert "base64+/=" not in str(refused.value)
