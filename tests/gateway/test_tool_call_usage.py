"""Tool calls counted for ``/usage``, through the real daemon path: Telegram emulator ->
gateway -> agent loop -> Anthropic emulator (``[[tool:...]]`` directives become tool_use
blocks), with the built-in calculator and the real stdio notes server (``write`` asks first)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import text

from gateway.config.schema import Config, parse_config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.users.access import day_start
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound

NOTES_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "notes_server.py"
GOOD_SUM = '[[tool:calculator {"expression": "6*7"}]] what is six times seven?'
BAD_SUM = '[[tool:calculator {"expression": ""}]] and this?'
READ = '[[tool:notes__read {"name": "shopping"}]] what is on my list?'
WRITE = '[[tool:notes__write {"name": "plan", "text": "secret plan"}]] save my plan'


def notes_config(
    tmp_path: Path, anthropic: AnthropicEmulator, telegram: TelegramEmulator
) -> Config:
    base = gateway_config(
        tmp_path, anthropic, telegram=telegram, telegram_settings={"admin_users": [ALICE]}
    )
    data = base.model_dump(mode="json")
    server = {"command": sys.executable, "args": [str(NOTES_SERVER)], "ask": ["write"]}
    data["mcp"] = {"servers": {"notes": server}}
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


async def send(gateway: Gateway, telegram: TelegramEmulator, message: str) -> str:
    """Alice sends ``message``, handled to the end; the last message the bot sent."""
    update = telegram.push_message(ALICE, message)
    await settled_inbound(gateway, "telegram", message_key(update))
    return str(telegram.sent_messages(ALICE)[-1]["text"])


async def approval_prompt(telegram: TelegramEmulator, before: int) -> dict[str, Any]:
    """The first message after ``before`` that carries buttons."""
    while True:
        sent = await telegram.wait_for_sent(ALICE, before + 1)
        for message in sent[before:]:
            if message.get("reply_markup"):
                return message
        before = len(sent)


def button(prompt: dict[str, Any], label: str) -> str:
    rows = prompt["reply_markup"]["inline_keyboard"]
    return next(b["callback_data"] for row in rows for b in row if b["text"] == label)


async def test_usage_counts_each_tool_call_with_its_time_and_outcome(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with running(notes_config(tmp_path, anthropic, telegram)) as gateway:
        assert "42" in await send(gateway, telegram, GOOD_SUM)
        await send(gateway, telegram, BAD_SUM)
        assert "milk, eggs, bread" in await send(gateway, telegram, READ)

        denied = telegram.push_message(ALICE, WRITE)
        prompt = await approval_prompt(telegram, len(telegram.sent_messages(ALICE)))
        telegram.press_button(ALICE, prompt["message_id"], button(prompt, "Deny"))
        await settled_inbound(gateway, "telegram", message_key(denied))

        before = len(telegram.sent_messages(ALICE))
        telegram.push_message(ALICE, WRITE)
        await approval_prompt(telegram, before)
        stop = telegram.push_message(ALICE, "/stop")
        await settled_inbound(gateway, "telegram", message_key(stop))
        await gateway.wait_idle()

        usage = await send(gateway, telegram, "/usage")
        everyone = await send(gateway, telegram, "/usage all")
        stats = {s.tool: s for s in await gateway.app.repo.tool_call_stats(day_start())}
        async with gateway.app.repo.store.engine.connect() as connection:
            rows = (await connection.execute(text("SELECT * FROM tool_calls"))).all()

    mine = usage.split("Your tool calls:", 1)[1]
    today = mine.split("this month:")[0]
    assert "today (UTC): 5 calls," in today
    assert "1 error, 1 not approved, 1 cancelled" in today
    assert "calculator: 2 calls," in today and "(longest " in today
    assert "notes__read: 1 call," in today
    assert "notes__write: 2 calls, 1 not approved, 1 cancelled" in today
    assert "Everyone's tool calls:" in everyone and "calculator: 2 calls" in everyone

    assert stats["calculator"].errors == 1
    assert stats["calculator"].run_seconds > 0
    assert stats["notes__read"].longest_seconds > 0
    assert (stats["notes__write"].refused, stats["notes__write"].cancelled) == (1, 1)
    assert stats["notes__write"].run_seconds == 0, "a call never run has no run time"
    assert {row.user_key for row in rows} == {f"telegram:{ALICE}"}
    stored = repr(rows)
    for argument_or_result in ("6*7", "shopping", "milk", "secret plan"):
        assert argument_or_result not in stored
