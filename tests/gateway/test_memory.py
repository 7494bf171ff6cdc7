"""Per-user memory through the real daemon: the memory tool, the prompt snapshot at cold points.

The Telegram and Anthropic emulators; the model's memory calls are scripted with the Anthropic
emulator's ``[[tool:NAME {args}]]`` directive. Message times (``date=``) move the session clock.
"""

from __future__ import annotations

import json

from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, all_quiet

BOB = 7
GROUP = -100200300
BOT = "@hermes_test_bot"
START = 1_800_000_000
"""Message times (epoch seconds) the test moves the session clock with."""
WARM_GAP = 10
COLD_GAP = 3 * 3600
"""Past every cache tier's lifetime: the next message finds the prompt cache cold."""
FACT = "Alice's cat is called Miso"


def remember(fact: str) -> str:
    """A user message the emulated model answers with a memory tool call adding ``fact``."""
    args = json.dumps({"action": "add", "content": fact})
    return f"[[tool:memory {args}]]"


async def say(
    gateway: Gateway,
    telegram: TelegramEmulator,
    chat_id: int,
    text: str,
    at: int,
    **options: object,
) -> None:
    telegram.push_message(chat_id, text, date=at, **options)  # type: ignore[arg-type]
    await all_quiet(gateway, telegram)


async def test_a_remembered_fact_is_in_the_next_sessions_prompt_and_only_the_users(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        await say(gateway, telegram, ALICE, remember(FACT), START)
        tool_result = anthropic.requests[-1].body["messages"][-1]["content"][0]["content"]
        await say(gateway, telegram, ALICE, "/new", START + 20)
        await say(gateway, telegram, ALICE, "what is my cat called?", START + 30)
        after_new = anthropic.requests[-1]
        await say(gateway, telegram, BOB, "hello", START + 40, username="bob")
        bobs = anthropic.requests[-1]
    assert f'Remembered: "{FACT}"' in str(tool_result)
    assert FACT in after_new.system_text
    assert after_new.last_user_text == "what is my cat called?"
    assert FACT not in bobs.system_text and bobs.last_user_text == "hello"
    assert "memory" in [tool["name"] for tool in bobs.body["tools"]]


async def test_a_fact_written_mid_visit_waits_for_the_cache_to_go_cold(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        await say(gateway, telegram, ALICE, "hi", START)
        first = anthropic.requests[-1].system_text
        await say(gateway, telegram, ALICE, remember(FACT), START + WARM_GAP)
        await say(gateway, telegram, ALICE, "and now?", START + 2 * WARM_GAP)
        same_visit = anthropic.requests[-1]
        await say(gateway, telegram, ALICE, "back again", START + 2 * WARM_GAP + COLD_GAP)
        next_visit = anthropic.requests[-1]
    assert same_visit.last_user_text == "and now?"
    assert same_visit.system_text == first and FACT not in first
    assert next_visit.last_user_text == "back again"
    assert FACT in next_visit.system_text


async def test_a_group_prompt_holds_the_groups_memory_and_no_ones_personal_memory(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    group = {"chat_type": "supergroup", "user_id": ALICE}
    async with run_gateway(telegram=telegram) as gateway:
        await say(gateway, telegram, ALICE, remember(FACT), START)
        await say(
            gateway,
            telegram,
            GROUP,
            f"{BOT} " + remember("The group meets on Fridays"),
            START,
            **group,
        )
        await say(gateway, telegram, GROUP, "/new", START + 20, **group)
        await say(gateway, telegram, GROUP, f"{BOT} when do we meet?", START + 30, **group)
        in_group = anthropic.requests[-1]
    assert in_group.last_user_text.endswith("when do we meet?")
    assert "The group meets on Fridays" in in_group.system_text
    assert FACT not in in_group.system_text


async def test_memory_lists_and_removes_entries_and_forget_deletes_them(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        await say(gateway, telegram, ALICE, remember(FACT), START)
        await say(gateway, telegram, ALICE, remember("Alice drinks green tea"), START + 10)
        await say(gateway, telegram, BOB, remember("Bob is a pilot"), START + 10, username="bob")
        await say(gateway, telegram, ALICE, "/memory", START + 20)
        listed = telegram.sent_messages(ALICE)[-1]["text"]
        await say(gateway, telegram, ALICE, "/memory remove 1", START + 30)
        removed = telegram.sent_messages(ALICE)[-1]["text"]
        await say(gateway, telegram, ALICE, "/memory", START + 40)
        after_remove = telegram.sent_messages(ALICE)[-1]["text"]
        await say(gateway, telegram, ALICE, "/forget", START + 50)
        asked = telegram.sent_messages(ALICE)[-1]["text"]
        await say(gateway, telegram, ALICE, "/forget confirm", START + 60)
        await say(gateway, telegram, ALICE, "/memory", START + 70)
        after_forget = telegram.sent_messages(ALICE)[-1]["text"]
        await say(gateway, telegram, BOB, "/memory", START + 80, username="bob")
        bobs = telegram.sent_messages(BOB)[-1]["text"]
    assert listed == f"What I remember about you:\n1. {FACT}\n2. Alice drinks green tea"
    assert removed == f"Removed: {FACT}"
    assert after_remove == "What I remember about you:\n1. Alice drinks green tea"
    assert "(1 memory entries)" in asked
    assert after_forget == "I remember nothing yet. Ask me to remember something."
    assert bobs == "What I remember about you:\n1. Bob is a pilot"
