"""Polling survives bad answers and bad updates: nothing blocks the messages behind them.

The real python-telegram-bot client polls the emulator, which is told to answer getUpdates with
an HTML page, revoke the token, or deliver updates no real Telegram would send (missing fields,
a message of the wrong type, text with a lone surrogate). Every case checks that the good
messages around the bad one are answered, and that the log (captured at DEBUG, every library
included) holds neither the users' words nor any secret.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from gateway.runtime.app import QUIET_LIBRARIES
from gateway.runtime.daemon import EXIT_NO_ADAPTER_LEFT, run_gateway
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.telegram_poison import PROXY_PAGE
from tests.gateway.conftest import (
    ALICE,
    MODEL_KEY_ENV,
    TELEGRAM_TOKEN_ENV,
    GatewayFactory,
    gateway_config,
    message_key,
    settled_inbound,
    telegram_adapter,
)
from tests.gateway.test_telegram_webhook import WEBHOOK_SETTINGS

WAIT = 30.0
"""Recovery must come within 30 s of a fault ending (the acceptance bound)."""
SECRET_WORDS = "zebra-quartz-marmalade"
"""Part of every user text here: must never reach the log."""


@pytest.fixture
def debug_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The log as the daemon writes it at level DEBUG, plus python-telegram-bot's and httpx's
    DEBUG records (which carry request parameters and URLs with the token)."""
    caplog.set_level(logging.DEBUG)
    for name in QUIET_LIBRARIES:
        caplog.set_level(logging.WARNING, logger=name)
    for name in ("telegram", "httpx"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def assert_clean(log: pytest.LogCaptureFixture, telegram: TelegramEmulator) -> None:
    text = log.text
    assert SECRET_WORDS not in text
    assert telegram.token.removesuffix("-revoked") not in text
    assert "test-key" not in text
    assert "Bad Gateway</h1>" not in text


async def dead_letters(gateway: Gateway, count: int) -> int:
    async with asyncio.timeout(WAIT):
        # The store offers no event for a new dead letter: poll its count.
        while (found := await gateway.app.repo.count_dead_letters("telegram")) < count:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    return found


async def test_html_answers_to_get_updates_are_survived_and_logged_once(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    debug_log: pytest.LogCaptureFixture,
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_message(ALICE, f"before {SECRET_WORDS}")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        telegram.serve_html(count=3)
        polls = len(telegram.calls_of("getUpdates"))
        await telegram.wait_for_calls("getUpdates", polls + 4, timeout=WAIT)
        telegram.push_message(ALICE, f"after {SECRET_WORDS}")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
    assert sent[1]["text"].startswith("Noted: after")
    failures = [r for r in debug_log.records if "getUpdates failed" in r.getMessage()]
    assert len(failures) == 1
    assert "Invalid server response" in failures[0].getMessage()
    assert any("getUpdates works again" in r.getMessage() for r in debug_log.records)
    assert PROXY_PAGE not in debug_log.text
    assert_clean(debug_log, telegram)


@pytest.mark.parametrize(
    "fault",
    [{"status": 500}, {"status": 502}, {"status": 409}, {"status": 401}, "drop"],
    ids=["500", "502", "409-conflict", "401-not-confirmed-by-getMe", "dropped-connection"],
)
async def test_get_updates_errors_are_retried_and_the_messages_waiting_are_answered(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    debug_log: pytest.LogCaptureFixture,
    fault: dict[str, int] | str,
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        polls = len(telegram.calls_of("getUpdates"))
        if fault == "drop":
            telegram.drop_connections("getUpdates", count=2)
        else:
            assert isinstance(fault, dict)
            telegram.inject_fault("getUpdates", count=2, **fault)
        await telegram.wait_for_calls("getUpdates", polls + 2, timeout=WAIT)
        telegram.push_message(ALICE, f"waiting {SECRET_WORDS}")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        failure = telegram_adapter(gateway).failure
    failures = [r for r in debug_log.records if "getUpdates failed" in r.getMessage()]
    assert sent[0]["text"].startswith("Noted: waiting")
    assert failure is None  # a 401 that getMe does not confirm is a passing fault
    assert len(failures) == 1
    assert_clean(debug_log, telegram)


@pytest.mark.parametrize(
    "missing", [("date",), ("chat",), ("message_id",), ("from",)], ids=lambda m: m[0]
)
async def test_a_message_missing_a_required_field_is_quarantined_and_the_next_is_answered(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    debug_log: pytest.LogCaptureFixture,
    missing: tuple[str, ...],
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        before = telegram.push_message(ALICE, f"first {SECRET_WORDS}")
        poison = telegram.push_malformed_message(ALICE, f"bad {SECRET_WORDS}", missing=missing)
        after = telegram.push_message(ALICE, f"second {SECRET_WORDS}")
        sent = await telegram.wait_for_sent(ALICE, 2, timeout=WAIT)
        quarantined = await dead_letters(gateway, 1)
        first = await settled_inbound(gateway, "telegram", message_key(before))
        second = await settled_inbound(gateway, "telegram", message_key(after))
    assert quarantined == 1
    assert (first.status, second.status) == ("done", "done")
    assert [r.last_user_text.split()[0] for r in anthropic.requests] in (
        ["first", "second"],
        ["first"],  # merged into one turn
    )
    assert all("bad" not in m["text"] for m in sent)
    assert telegram.confirmed_offset > poison["update_id"]
    assert_clean(debug_log, telegram)


@pytest.mark.parametrize("payload", ["hello", [1, 2], 5, None], ids=repr)
async def test_a_message_of_the_wrong_type_is_quarantined_and_polling_goes_on(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    debug_log: pytest.LogCaptureFixture,
    payload: Any,
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        poison = telegram.push_raw_update("message", payload)
        telegram.push_message(ALICE, f"still there {SECRET_WORDS}")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        quarantined = await dead_letters(gateway, 1)
    assert sent[0]["text"].startswith("Noted: still there")
    assert quarantined == 1
    assert telegram.confirmed_offset > poison["update_id"]
    assert_clean(debug_log, telegram)


async def test_text_with_a_lone_surrogate_and_nul_is_repaired_stored_and_answered(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    debug_log: pytest.LogCaptureFixture,
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, f"broken \ud800 te\x00xt {SECRET_WORDS}")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        record = await settled_inbound(gateway, "telegram", message_key(update))
        quarantined = await gateway.app.repo.count_dead_letters()
    assert record.status == "done"
    assert record.text == f"broken \ufffd text {SECRET_WORDS}"
    assert anthropic.requests[0].last_user_text.startswith("broken \ufffd text")
    assert sent[0]["text"].startswith("Noted: broken")
    assert quarantined == 0
    assert_clean(debug_log, telegram)


async def test_a_token_revoked_mid_run_stops_the_adapter_with_one_error_naming_the_variable(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    debug_log: pytest.LogCaptureFixture,
) -> None:
    token = telegram.token
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_message(ALICE, "hello")
        await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        telegram.revoke_token()
        async with asyncio.timeout(WAIT):
            await gateway.no_adapter_left.wait()
        failure = telegram_adapter(gateway).failure
    errors = [r for r in debug_log.records if r.levelno >= logging.ERROR]
    naming = [r for r in errors if TELEGRAM_TOKEN_ENV in r.getMessage()]
    assert failure is not None and TELEGRAM_TOKEN_ENV in failure
    assert len(naming) == 1
    assert token not in debug_log.text
    assert_clean(debug_log, telegram)


async def test_a_short_burst_of_401s_on_every_method_is_not_taken_for_a_revoked_token(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    debug_log: pytest.LogCaptureFixture,
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        polls = len(telegram.calls_of("getUpdates"))
        telegram.inject_fault("*", status=401, count=4)  # getUpdates, getMe, getUpdates, getMe
        await telegram.wait_for_calls("getUpdates", polls + 3, timeout=WAIT)
        telegram.push_message(ALICE, f"after the burst {SECRET_WORDS}")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        failure = telegram_adapter(gateway).failure
    assert sent[0]["text"].startswith("Noted: after the burst")
    assert failure is None
    assert not [r for r in debug_log.records if r.levelno >= logging.ERROR]
    assert_clean(debug_log, telegram)


async def test_a_token_rejected_at_start_leaves_no_adapter_and_names_the_variable(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    debug_log: pytest.LogCaptureFixture,
) -> None:
    token = telegram.token
    telegram.revoke_token()
    async with run_gateway(telegram=telegram) as gateway:
        down = gateway.no_adapter_left.is_set()
        failure = telegram_adapter(gateway).failure
    assert down
    assert failure is not None and TELEGRAM_TOKEN_ENV in failure
    assert token not in debug_log.text
    assert MODEL_KEY_ENV not in (failure or "")
    assert_clean(debug_log, telegram)


async def test_the_daemon_exits_non_zero_once_its_only_adapter_lost_its_token(
    tmp_path: Path,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in QUIET_LIBRARIES:  # run_gateway sets these; caplog puts them back afterwards
        caplog.set_level(logging.WARNING, logger=name)
    config = gateway_config(tmp_path, anthropic, telegram=telegram)
    daemon = asyncio.create_task(run_gateway(config))
    telegram.push_message(ALICE, "hello")
    await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
    telegram.revoke_token()
    async with asyncio.timeout(WAIT):
        code = await daemon
    assert code == EXIT_NO_ADAPTER_LEFT


async def test_an_admins_status_counts_quarantined_updates_and_nobody_elses_does(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    bob = 7
    settings = {"admin_users": [ALICE]}
    async with run_gateway(telegram=telegram, telegram_settings=settings) as gateway:
        telegram.push_malformed_message(ALICE, "broken", missing=("date",))
        await dead_letters(gateway, 1)
        telegram.push_message(ALICE, "/status")
        telegram.push_message(bob, "/status", username="bob")
        admin = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        other = await telegram.wait_for_sent(bob, 1, timeout=WAIT)
    assert "Quarantined updates: 1" in admin[0]["text"]
    assert "telegram: running" in admin[0]["text"]
    assert "Quarantined" not in other[0]["text"]


async def test_a_poison_update_posted_to_the_webhook_is_quarantined_and_acknowledged(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, debug_log: pytest.LogCaptureFixture
) -> None:
    async with run_gateway(telegram=telegram, telegram_settings=WEBHOOK_SETTINGS) as gateway:
        telegram.push_malformed_message(ALICE, f"bad {SECRET_WORDS}", missing=("message_id",))
        telegram.push_message(ALICE, f"good {SECRET_WORDS}")
        sent = await telegram.wait_for_sent(ALICE, 1, timeout=WAIT)
        quarantined = await dead_letters(gateway, 1)
    statuses = [attempt.status for attempt in telegram.webhook_attempts]
    assert sent[0]["text"].startswith("Noted: good")
    assert quarantined == 1
    assert statuses == [200, 200]
    assert_clean(debug_log, telegram)
