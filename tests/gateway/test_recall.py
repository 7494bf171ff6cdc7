"""Recall through the real daemon: the Telegram and Anthropic emulators, the model's recall
call scripted with the emulator's ``[[tool:NAME {args}]]`` directive."""

from __future__ import annotations

import json

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory
from tests.gateway.test_memory import BOB, START, say


def recall(query: str) -> str:
    """A user message the emulated model answers with a recall call for ``query``."""
    return f"[[tool:recall {json.dumps({'query': query})}]]"


def last_tool_result(anthropic: AnthropicEmulator) -> str:
    return str(anthropic.requests[-1].body["messages"][-1]["content"][0]["content"])


async def test_recall_finds_a_fact_of_the_users_old_session_and_nothing_of_another_users(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        await say(gateway, telegram, ALICE, "My locker code is 4711, keep it quiet", START)
        await say(gateway, telegram, BOB, "The harbour ferry leaves at 6", START, username="bob")
        await say(gateway, telegram, ALICE, "/new", START + 20)
        await say(gateway, telegram, ALICE, recall("locker code"), START + 30)
        alices = last_tool_result(anthropic)
        await say(gateway, telegram, ALICE, recall("harbour ferry"), START + 40)
        not_hers = last_tool_result(anthropic)
        await say(gateway, telegram, BOB, recall("locker code"), START + 50, username="bob")
        not_his = last_tool_result(anthropic)
        offered = [tool["name"] for tool in anthropic.requests[-1].body["tools"]]
    assert "My locker code is 4711, keep it quiet" in alices and "(session " in alices
    assert not_hers == "Nothing found for 'harbour ferry' in earlier conversations."
    assert not_his == "Nothing found for 'locker code' in earlier conversations."
    assert "recall" in offered
