"""The Telegram emulator's webhook mode behaves as the Bot API does.

setWebhook turns getUpdates off (409 Conflict) and makes the emulator POST every update to the
webhook with the secret token header; an update is removed only after a 2xx, anything else is
retried and reported by getWebhookInfo. The real python-telegram-bot Bot sets things up; a small
aiohttp app stands in for the bot's webhook endpoint.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from telegram import Bot
from telegram.error import BadRequest, Conflict

from sandbox.telegram_api import TelegramEmulator
from sandbox.telegram_webhook import SECRET_HEADER

ALICE = 42
BOB = 43
SECRET = "s3cret_token-1"
RETRY_SECONDS = 0.05
POLL_TIMEOUT = 1
WAIT = 5.0
WRONG_RESPONSE = "Wrong response from the webhook"
WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)


class Receiver:
    """A webhook endpoint that records each POST; it answers `failure_status` for updates of
    the chats in `failing_chats` and 200 otherwise."""

    def __init__(self) -> None:
        self.posts: list[tuple[str | None, dict[str, Any]]] = []
        self.failing_chats: set[int] = set()
        self.failure_status = 500
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hook", self._receive)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/hook"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _receive(self, request: web.Request) -> web.Response:
        update = await request.json()
        self.posts.append((request.headers.get(SECRET_HEADER), update))
        failing = update["message"]["chat"]["id"] in self.failing_chats
        return web.Response(status=self.failure_status if failing else 200)

    def texts(self) -> list[str]:
        return [update["message"]["text"] for _, update in self.posts]


@pytest.fixture
async def emulator() -> AsyncIterator[TelegramEmulator]:
    emu = TelegramEmulator(webhook_retry_seconds=RETRY_SECONDS)
    await emu.start()
    try:
        yield emu
    finally:
        await emu.stop()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    endpoint = Receiver()
    await endpoint.start()
    try:
        yield endpoint
    finally:
        await endpoint.stop()


def unused_local_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (the port was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


async def test_get_updates_answers_conflict_while_a_webhook_is_set_and_works_after_delete(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    await bot.set_webhook(unused_local_url())
    with pytest.raises(Conflict) as refused:
        await bot.get_updates(timeout=0)
    await bot.delete_webhook()
    pushed = emulator.push_message(ALICE, "kept for polling")
    updates = await bot.get_updates(timeout=0)

    assert refused.value.message == WEBHOOK_CONFLICT
    assert emulator.webhook_url == ""
    assert [u.update_id for u in updates] == [pushed["update_id"]]


async def test_set_webhook_ends_a_running_long_poll_with_a_conflict(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=POLL_TIMEOUT + 3))
    await emulator.wait_for_calls("getUpdates")
    await bot.set_webhook(unused_local_url())
    with pytest.raises(Conflict) as ended:
        await asyncio.wait_for(poll, WAIT)
    assert "terminated by setWebhook request" in ended.value.message


async def test_pending_and_new_updates_are_posted_in_order_with_the_secret_header(
    emulator: TelegramEmulator, bot: Bot, receiver: Receiver
) -> None:
    emulator.push_message(ALICE, "one")
    emulator.push_message(ALICE, "two")
    await bot.set_webhook(receiver.url, secret_token=SECRET, allowed_updates=["message"])
    emulator.push_message(ALICE, "three")
    await emulator.wait_for_webhook_attempts(3, WAIT, succeeded=True)
    info = await bot.get_webhook_info()

    assert receiver.texts() == ["one", "two", "three"]
    assert {secret for secret, _ in receiver.posts} == {SECRET}
    assert info.url == receiver.url
    assert info.pending_update_count == 0
    assert info.allowed_updates == ("message",)
    assert info.last_error_message is None


async def test_a_failed_post_is_retried_and_later_updates_of_the_chat_wait_for_it(
    emulator: TelegramEmulator, bot: Bot, receiver: Receiver
) -> None:
    receiver.failing_chats.add(ALICE)
    emulator.push_message(ALICE, "first")
    emulator.push_message(ALICE, "second")
    await bot.set_webhook(receiver.url)
    await emulator.wait_for_webhook_attempts(2, WAIT)
    failing = await bot.get_webhook_info()
    receiver.failing_chats.clear()
    await emulator.wait_for_webhook_attempts(2, WAIT, succeeded=True)
    settled = await bot.get_webhook_info()

    texts = receiver.texts()
    statuses = [attempt.status for attempt in emulator.webhook_attempts]
    assert texts[-2:] == ["first", "second"]
    assert set(texts[:-2]) == {"first"}
    assert len(texts) >= 4
    assert set(statuses[:-2]) == {500}
    assert statuses[-2:] == [200, 200]
    assert failing.pending_update_count == 2
    assert failing.last_error_message == f"{WRONG_RESPONSE}: 500 Internal Server Error"
    assert failing.last_error_date is not None
    assert settled.pending_update_count == 0


async def test_a_chat_whose_posts_fail_does_not_hold_up_other_chats(
    emulator: TelegramEmulator, bot: Bot, receiver: Receiver
) -> None:
    receiver.failing_chats.add(ALICE)
    receiver.failure_status = 502
    emulator.push_message(ALICE, "stuck")
    emulator.push_message(BOB, "flows", username="bob", first_name="Bob")
    await bot.set_webhook(receiver.url)
    await emulator.wait_for_webhook_attempts(1, WAIT, succeeded=True)
    info = await bot.get_webhook_info()

    assert "flows" in receiver.texts()
    assert info.pending_update_count == 1
    assert info.last_error_message == f"{WRONG_RESPONSE}: 502 Bad Gateway"


async def test_an_unreachable_webhook_keeps_the_update_queued_and_reports_the_error(
    emulator: TelegramEmulator, bot: Bot, receiver: Receiver
) -> None:
    emulator.push_message(ALICE, "nobody home")
    await bot.set_webhook(unused_local_url())
    await emulator.wait_for_webhook_attempts(1, WAIT)
    unreachable = emulator.webhook_info()
    await bot.set_webhook(receiver.url)
    await emulator.wait_for_webhook_attempts(1, WAIT, succeeded=True)

    assert unreachable["last_error_message"] == "Connection refused"
    assert unreachable["pending_update_count"] == 1
    assert receiver.texts() == ["nobody home"]


async def test_a_redelivered_update_is_posted_again_under_the_same_update_id(
    emulator: TelegramEmulator, bot: Bot, receiver: Receiver
) -> None:
    await bot.set_webhook(receiver.url)
    pushed = emulator.push_message(ALICE, "again")
    await emulator.wait_for_webhook_attempts(1, WAIT, succeeded=True)
    emulator.redeliver(pushed["update_id"])
    await emulator.wait_for_webhook_attempts(2, WAIT, succeeded=True)

    assert [update["update_id"] for _, update in receiver.posts] == [pushed["update_id"]] * 2


async def test_delete_webhook_stops_the_posts_and_leaves_updates_to_get_updates(
    emulator: TelegramEmulator, bot: Bot, receiver: Receiver
) -> None:
    await bot.set_webhook(receiver.url)
    await bot.delete_webhook()
    pushed = emulator.push_message(ALICE, "for polling")
    updates = await bot.get_updates(timeout=0)
    info = await bot.get_webhook_info()

    assert receiver.posts == []
    assert [u.update_id for u in updates] == [pushed["update_id"]]
    assert info.url == ""


@pytest.mark.parametrize("secret", ["has space", "base64+/=", "x" * 257])
async def test_set_webhook_refuses_a_secret_token_telegram_would_refuse(
    emulator: TelegramEmulator, bot: Bot, secret: str
) -> None:
    with pytest.raises(BadRequest, match=r"[Ss]ecret token"):
        await bot.set_webhook(unused_local_url(), secret_token=secret)
    assert emulator.webhook_url == ""


async def test_set_webhook_refuses_a_url_that_is_not_http(bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)https url must be provided"):
        await bot.set_webhook("ftp://127.0.0.1/hook")
