"""Approvals in the chat, through the real daemon path: Telegram emulator (inline keyboards,
callback queries) -> gateway -> agent loop -> Anthropic emulator, with the real stdio notes
server whose ``write`` tool is in the server's ``ask`` list."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent.tools.approvals import DENIED_RESULT, TIMED_OUT_RESULT
from gateway.config.schema import Config, parse_config
from gateway.delivery.approvals import NOT_YOURS_TEXT
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound

NOTES_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "notes_server.py"
WRITE = '[[tool:notes__write {"name": "plan", "text": "<b>buy</b> & sell"}]] save my plan'
BOB = 4242


def approval_config(base: Config, *, timeout: float = 30.0) -> Config:
    data = base.model_dump(mode="json")
    server = {"command": sys.executable, "args": [str(NOTES_SERVER)], "ask": ["write"]}
    data["mcp"] = {"servers": {"notes": server}, "approval_timeout_seconds": timeout}
    return parse_config(data)


@asynccontextmanager
async def running(config: Config) -> AsyncIterator[Gateway]:
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            yield gateway
        finally:
            await gateway.stop(grace_seconds=2.0)


async def prompt_of(telegram: TelegramEmulator, before: int) -> dict[str, Any]:
    """The first message after ``before`` that carries buttons (the approval prompt)."""
    async with asyncio.timeout(10):
        while True:
            sent = await telegram.wait_for_sent(ALICE, before + 1)
            for message in sent[before:]:
                if message.get("reply_markup"):
                    return message
            await telegram.wait_for_sent(ALICE, len(sent) + 1)


def button(prompt: dict[str, Any], label: str) -> str:
    """The callback_data of the prompt's button labelled ``label``."""
    rows = prompt["reply_markup"]["inline_keyboard"]
    return next(b["callback_data"] for row in rows for b in row if b["text"] == label)


async def answered(gateway: Gateway, telegram: TelegramEmulator, update: dict[str, Any]) -> str:
    await settled_inbound(gateway, "telegram", message_key(update))
    return str(telegram.sent_messages(ALICE)[-1]["text"])


@pytest.fixture
def base(tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator) -> Config:
    return gateway_config(tmp_path, anthropic, telegram=telegram)


async def test_allow_once_runs_the_call_after_a_prompt_with_escaped_bounded_arguments(
    base: Config, telegram: TelegramEmulator
) -> None:
    async with running(approval_config(base)) as gateway:
        update = telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        assert prompt["parse_mode"] == "HTML"
        assert "notes__write" in prompt["text"]
        assert '"text": "<b>buy</b> & sell"' in prompt["text"], "escaped, shown as typed"
        assert "&lt;b&gt;" in prompt["source_text"]
        datas = [b["callback_data"] for b in prompt["reply_markup"]["inline_keyboard"][0]]
        assert len(datas) == 3 and all(len(d.encode()) <= 64 for d in datas)

        telegram.press_button(ALICE, prompt["message_id"], button(prompt, "Allow once"))
        reply = await answered(gateway, telegram, update)
        assert "saved plan" in reply
        # The press was answered; the prompt now says what happened and has no buttons.
        assert telegram.callback_answers[-1]["text"] is None
        assert telegram.open_callback_queries() == []
        shown = telegram.message(ALICE, prompt["message_id"])
        assert shown is not None and "reply_markup" not in shown
        assert "Allowed once." in shown["text"]
        # A bot message like a reply part: the probe for a part in doubt knows it.
        sent, _received = await gateway.app.repo.recent_chat_ids("telegram", str(ALICE))
        assert str(prompt["message_id"]) in sent

        # Once means once: the next call asks again.
        before = len(telegram.sent_messages(ALICE))
        again = telegram.push_message(ALICE, WRITE)
        second = await prompt_of(telegram, before)
        telegram.press_button(ALICE, second["message_id"], button(second, "Allow once"))
        assert "saved plan" in await answered(gateway, telegram, again)


async def test_deny_tells_the_model_and_never_runs_the_tool(
    base: Config, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with running(approval_config(base)) as gateway:
        update = telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        telegram.press_button(ALICE, prompt["message_id"], button(prompt, "Deny"))
        reply = await answered(gateway, telegram, update)
    assert DENIED_RESULT in reply
    assert "saved" not in reply
    shown = telegram.message(ALICE, prompt["message_id"])
    assert shown is not None and "Denied." in shown["text"] and "reply_markup" not in shown


async def test_no_answer_in_time_counts_as_deny(base: Config, telegram: TelegramEmulator) -> None:
    async with running(approval_config(base, timeout=0.3)) as gateway:
        update = telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        reply = await answered(gateway, telegram, update)
    assert TIMED_OUT_RESULT in reply
    shown = telegram.message(ALICE, prompt["message_id"])
    assert shown is not None and "No answer in time" in shown["text"]
    assert "reply_markup" not in shown


async def test_someone_else_pressing_is_refused_on_the_button(
    base: Config, telegram: TelegramEmulator
) -> None:
    async with running(approval_config(base)) as gateway:
        update = telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        telegram.press_button(
            ALICE, prompt["message_id"], button(prompt, "Allow once"), user_id=BOB, username="eve"
        )
        await telegram.wait_for_calls("answerCallbackQuery", 1)
        assert telegram.callback_answers[0]["text"] == NOT_YOURS_TEXT
        shown = telegram.message(ALICE, prompt["message_id"])
        assert shown is not None and shown.get("reply_markup"), "still waiting for Alice"

        telegram.press_button(ALICE, prompt["message_id"], button(prompt, "Deny"))
        assert DENIED_RESULT in await answered(gateway, telegram, update)


async def test_always_in_this_chat_is_stored_and_survives_a_restart(
    base: Config, telegram: TelegramEmulator
) -> None:
    config = approval_config(base)
    async with running(config) as gateway:
        update = telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        telegram.press_button(ALICE, prompt["message_id"], button(prompt, "Always in this chat"))
        assert "saved plan" in await answered(gateway, telegram, update)
    prompts = len(telegram.markup_edits) + len(telegram.callback_answers)

    async with running(config) as gateway:
        before = len(telegram.sent_messages(ALICE))
        update = telegram.push_message(ALICE, WRITE)
        assert "saved plan" in await answered(gateway, telegram, update)
        new = telegram.sent_messages(ALICE)[before:]
        assert all(not m.get("reply_markup") for m in new), "not asked again"
        assert len(telegram.markup_edits) + len(telegram.callback_answers) == prompts


async def test_over_the_webhook_a_press_arrives_and_is_answered(
    base: Config, telegram: TelegramEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_TEST_APPROVAL_WEBHOOK_SECRET", "approval-webhook-secret-0123456789")
    data = base.model_dump(mode="json")
    data["platforms"]["telegram"].update(
        mode="webhook",
        webhook_listen="127.0.0.1",
        webhook_port=0,
        webhook_url="http://127.0.0.1:0/telegram",
        webhook_secret_env="HERMES_TEST_APPROVAL_WEBHOOK_SECRET",
    )
    async with running(approval_config(parse_config(data))) as gateway:
        update = telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        telegram.press_button(ALICE, prompt["message_id"], button(prompt, "Allow once"))
        assert "saved plan" in await answered(gateway, telegram, update)
    assert "callback_query" in telegram.calls_of("setWebhook")[0]["allowed_updates"]
    assert len(telegram.callback_answers) == 1


async def test_an_admin_may_answer_for_the_user(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    base = gateway_config(
        tmp_path, anthropic, telegram=telegram, telegram_settings={"admin_users": [BOB]}
    )
    async with running(approval_config(base)) as gateway:
        update = telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        telegram.press_button(
            ALICE, prompt["message_id"], button(prompt, "Allow once"), user_id=BOB, username="bob"
        )
        assert "saved plan" in await answered(gateway, telegram, update)
    assert telegram.callback_answers[0]["text"] is None


async def test_stop_while_a_prompt_waits_closes_it_and_runs_nothing(
    base: Config, telegram: TelegramEmulator
) -> None:
    async with running(approval_config(base)) as gateway:
        telegram.push_message(ALICE, WRITE)
        prompt = await prompt_of(telegram, 0)
        stop = telegram.push_message(ALICE, "/stop")
        await settled_inbound(gateway, "telegram", message_key(stop))
        await gateway.wait_idle()
        assert gateway.approvals.waiting == 0
    shown = telegram.message(ALICE, prompt["message_id"])
    assert shown is not None and "reply_markup" not in shown
    assert "Stopped before an answer." in shown["text"]
    assert not any("saved plan" in m["text"] for m in telegram.sent_messages(ALICE))
