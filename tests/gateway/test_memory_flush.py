"""The memory flush at compaction through the real daemon: the summary request (Anthropic
emulator) also returns durable facts, which land in the user's memory once."""

from __future__ import annotations

from typing import Any

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory
from tests.gateway.test_memory import BOT, GROUP, START, say

FILLER = "Tell me more about sailing. " + "knots and sails " * 30
REMEMBER = "Please remember that my dog is called Rex"
COMPACTING = {
    "model_settings": {"context_length": 8000},
    "sections": {"compression": {"protect_last_n": 2, "target_ratio": 0.05}},
}


def options(flush: bool) -> dict[str, Any]:
    sections = {**COMPACTING["sections"], "memory": {"flush_on_compaction": flush}}
    return {**COMPACTING, "sections": sections}


def summary_requests(anthropic: AnthropicEmulator) -> list[str]:
    return [
        r.last_user_text for r in anthropic.requests if "structured summary" in r.last_user_text
    ]


IN_GROUP = {"chat_type": "supergroup", "user_id": ALICE}


async def chat_then_compress(
    gateway: Any, telegram: TelegramEmulator, at: int, chat: int = ALICE, **where: Any
) -> str:
    """A few turns around the fact (after the protected head), then ``/compress``; its answer."""
    mention = f"{BOT} " if where else ""
    for n, text in enumerate([FILLER, FILLER, REMEMBER, FILLER, FILLER]):
        await say(gateway, telegram, chat, mention + text, at + 10 * n, **where)
    await say(gateway, telegram, chat, "/compress sailing", at + 100, **where)
    return str(telegram.sent_messages(chat)[-1]["text"])


async def memory_listing(
    gateway: Any, telegram: TelegramEmulator, at: int, chat: int = ALICE, **where: Any
) -> str:
    await say(gateway, telegram, chat, "/memory", at, **where)
    return str(telegram.sent_messages(chat)[-1]["text"])


async def test_a_compaction_keeps_a_fact_of_the_summarised_part_in_memory_once(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram, **options(flush=True)) as gateway:
        compacted = await chat_then_compress(gateway, telegram, START)
        after_first = await memory_listing(gateway, telegram, START + 200)
        again = await chat_then_compress(gateway, telegram, START + 300)
        after_second = await memory_listing(gateway, telegram, START + 500)
    requests = summary_requests(anthropic)
    assert compacted.startswith("Compacted:"), compacted
    assert again.startswith("Compacted:"), again
    assert len(requests) == 2 and all("<durable-facts>" in r for r in requests)
    assert f"[user]: {REMEMBER}" in requests[1]  # the model is shown the same fact again
    assert after_first == "What I remember about you:\n1. My dog is called Rex"
    assert after_second == after_first


async def test_without_the_flush_a_compaction_leaves_memory_alone(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram, **options(flush=False)) as gateway:
        compacted = await chat_then_compress(gateway, telegram, START)
        listing = await memory_listing(gateway, telegram, START + 200)
    requests = summary_requests(anthropic)
    assert compacted.startswith("Compacted:"), compacted
    assert len(requests) == 1 and "<durable-facts>" not in requests[0]
    assert listing == "I remember nothing yet. Ask me to remember something."


async def test_the_lossless_engine_flushes_a_fact_into_memory_too(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    lcm = {"fresh_tail_count": 2, "fresh_tail_tokens": 100, "leaf_chunk_tokens": 2_000}
    sections = {"context": {"engine": "lcm", "lcm": lcm}}
    async with run_gateway(telegram=telegram, **{**COMPACTING, "sections": sections}) as gateway:
        compacted = await chat_then_compress(gateway, telegram, START)
        listing = await memory_listing(gateway, telegram, START + 200)
    assert compacted.startswith("Compacted:"), compacted
    assert any("<durable-facts>" in r for r in summary_requests(anthropic))
    assert listing == "What I remember about you:\n1. My dog is called Rex"


async def test_a_group_compaction_keeps_the_fact_in_the_groups_memory_not_the_users(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram, **options(flush=True)) as gateway:
        compacted = await chat_then_compress(gateway, telegram, START, GROUP, **IN_GROUP)
        groups = await memory_listing(gateway, telegram, START + 200, GROUP, **IN_GROUP)
        alices = await memory_listing(gateway, telegram, START + 210)
    assert compacted.startswith("Compacted:"), compacted
    assert groups == "What I remember for this group:\n1. My dog is called Rex"
    assert alices == "I remember nothing yet. Ask me to remember something."
