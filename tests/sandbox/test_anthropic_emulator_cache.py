"""The Anthropic emulator bills prompt caching by the documented rules.

Writes at breakpoints whose prefix reaches the model's minimum, reads of the longest live prefix
(looking back at most 20 blocks), TTLs on the manual clock refreshed by hits, misses on a model
switch; and always ``input + cache_read + cache_creation == the prompt's full size``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anthropic
import pytest
from anthropic.types import Usage

from sandbox.anthropic_api import AnthropicEmulator

SONNET = "claude-sonnet-4-5"
HAIKU_45 = "claude-haiku-4-5"
EPHEMERAL = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
EPOCH_MORNING = 1_796_288_400  # 2026-12-01 08:00 UTC, a transcript's own time
# About 1,500 tokens: above Sonnet's 1,024 minimum, below Haiku 4.5's 4,096.
LONG_SYSTEM_TEXT = "You are the house assistant. Keep answers short and friendly. " * 95


@pytest.fixture
async def emulator() -> AsyncIterator[AnthropicEmulator]:
    async with AnthropicEmulator() as emulator:
        yield emulator


@pytest.fixture
async def client(emulator: AnthropicEmulator) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=emulator.base_url, api_key="test", max_retries=0)
    yield client
    await client.close()


def cached_system(ttl: dict[str, Any] = EPHEMERAL) -> list[dict[str, Any]]:
    return [{"type": "text", "text": LONG_SYSTEM_TEXT, "cache_control": ttl}]


def request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": SONNET, "max_tokens": 64, "messages": messages, **extra}


def turn(role: str, text: str, *, breakpoint: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if breakpoint:
        block["cache_control"] = EPHEMERAL
    return {"role": role, "content": [block]}


def many_blocks(role: str, count: int, *, breakpoint_on_last: bool) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": f"note {i}: the weather was fine"} for i in range(count)
    ]
    if breakpoint_on_last:
        blocks[-1]["cache_control"] = EPHEMERAL
    return {"role": role, "content": blocks}


async def send(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic, body: dict[str, Any]
) -> Usage:
    """Send a request, check the size invariant against the server's count, return the usage."""
    usage = (await client.messages.create(**body)).usage
    read, written = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
    assert usage.input_tokens + read + written == emulator.count_tokens(body)
    assert usage.cache_creation is not None
    split = (
        usage.cache_creation.ephemeral_5m_input_tokens
        + usage.cache_creation.ephemeral_1h_input_tokens
    )
    assert split == written
    return usage


def system_tokens(emulator: AnthropicEmulator, model: str = SONNET) -> int:
    return emulator.count_tokens({"model": model, "system": cached_system(), "messages": []})


async def test_first_request_writes_and_identical_second_reads(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = request([turn("user", "hello")], system=cached_system())
    first = await send(emulator, client, body)
    second = await send(emulator, client, body)

    assert first.cache_creation_input_tokens == system_tokens(emulator)
    assert first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == system_tokens(emulator)
    assert second.cache_creation_input_tokens == 0
    assert second.input_tokens == first.input_tokens > 0
    assert emulator.stats.cache_write_tokens == emulator.stats.cache_read_tokens


async def test_a_new_turn_reads_the_old_prefix_and_writes_only_the_new_part(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    first_body = request([turn("user", "first question", breakpoint=True)], system=cached_system())
    second_body = request(
        [
            turn("user", "first question"),
            turn("assistant", "first answer"),
            turn("user", "second question", breakpoint=True),
        ],
        system=cached_system(),
    )
    await send(emulator, client, first_body)
    second = await send(emulator, client, second_body)

    assert second.cache_read_input_tokens == emulator.count_tokens(first_body)
    assert second.cache_creation_input_tokens == (
        emulator.count_tokens(second_body) - emulator.count_tokens(first_body)
    )
    assert second.input_tokens == 0
    assert [bp.location for bp in emulator.requests[1].breakpoints] == [
        "system.0",
        "messages.2.content.0",
    ]


async def test_a_prefix_below_the_model_minimum_is_not_cached(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = request([turn("user", "hello")], system=cached_system(), model=HAIKU_45)
    assert 1_024 < system_tokens(emulator, HAIKU_45) < 4_096

    usages = [await send(emulator, client, body) for _ in range(2)]

    assert [(u.cache_creation_input_tokens, u.cache_read_input_tokens) for u in usages] == [
        (0, 0),
        (0, 0),
    ]


async def test_the_minimum_can_be_overridden_per_model() -> None:
    async with AnthropicEmulator(min_cacheable_tokens={HAIKU_45: 1_000}) as emulator:
        client = anthropic.AsyncAnthropic(base_url=emulator.base_url, api_key="t", max_retries=0)
        body = request([turn("user", "hello")], system=cached_system(), model=HAIKU_45)
        usage = await send(emulator, client, body)
        await client.close()

    assert usage.cache_creation_input_tokens == system_tokens(emulator, HAIKU_45)
    assert emulator.min_cacheable_for("claude-3-5-haiku-20241022") == 2_048


async def test_a_5m_entry_expires_after_five_minutes_but_a_1h_entry_does_not(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    short = request([turn("user", "hello")], system=cached_system())
    long = request([turn("user", "hello")], system=cached_system(ONE_HOUR), model="claude-opus-4-1")
    await send(emulator, client, short)
    written_1h = await send(emulator, client, long)
    emulator.clock.advance(301)
    short_again = await send(emulator, client, short)
    long_again = await send(emulator, client, long)

    assert written_1h.cache_creation is not None
    assert written_1h.cache_creation.ephemeral_1h_input_tokens == system_tokens(emulator)
    assert short_again.cache_read_input_tokens == 0
    assert short_again.cache_creation_input_tokens == system_tokens(emulator)
    assert long_again.cache_read_input_tokens == system_tokens(emulator)
    emulator.clock.advance(3_601)
    assert (await send(emulator, client, long)).cache_read_input_tokens == 0


async def test_a_hit_refreshes_the_ttl(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = request([turn("user", "hello")], system=cached_system())
    await send(emulator, client, body)
    emulator.clock.advance(200)
    await send(emulator, client, body)
    emulator.clock.advance(200)  # 400 s after the write, 200 s after the refreshing hit

    assert (await send(emulator, client, body)).cache_read_input_tokens == system_tokens(emulator)


async def test_a_replay_sets_the_clock_to_message_times_and_the_ttl_follows_them(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = request([turn("user", "hello")], system=cached_system())
    control = f"{emulator.base_url}/_emulator/clock/set"
    async with aiohttp.ClientSession() as session:
        async with session.post(control, json={"now": EPOCH_MORNING}) as moved:
            assert (await moved.json())["now"] == EPOCH_MORNING
        written = await send(emulator, client, body)
        emulator.clock.advance_to(EPOCH_MORNING + 299)  # 299 s later: still warm, refreshed
        warm = await send(emulator, client, body)
        emulator.clock.advance_to(EPOCH_MORNING + 299 + 300)  # exactly 5 min after the hit
        cold = await send(emulator, client, body)
        async with session.post(control, json={"now": EPOCH_MORNING}) as backwards:
            refused = await backwards.json()

    assert written.cache_creation_input_tokens == system_tokens(emulator)
    assert warm.cache_read_input_tokens == system_tokens(emulator)
    assert cold.cache_read_input_tokens == 0
    assert cold.cache_creation_input_tokens == system_tokens(emulator)
    assert backwards.status == 400 and "back" in refused["error"]
    assert emulator.clock.now() == EPOCH_MORNING + 599


@pytest.mark.parametrize(("new_blocks", "expect_read"), [(20, True), (21, False)])
async def test_the_lookback_reaches_at_most_20_blocks_behind_a_breakpoint(
    emulator: AnthropicEmulator,
    client: anthropic.AsyncAnthropic,
    new_blocks: int,
    expect_read: bool,
) -> None:
    opening = [turn("user", "a long story follows " * 400, breakpoint=True)]
    first_body = request(opening)
    later_body = request(
        [
            turn("user", "a long story follows " * 400),
            turn("assistant", "go on"),  # one new block
            many_blocks("user", new_blocks - 1, breakpoint_on_last=True),
        ]
    )
    await send(emulator, client, first_body)
    later = await send(emulator, client, later_body)

    expected_read = emulator.count_tokens(first_body) if expect_read else 0
    assert later.cache_read_input_tokens == expected_read
    assert later.input_tokens == 0


async def test_switching_model_misses_the_cache(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    await send(emulator, client, request([turn("user", "hello")], system=cached_system()))
    switched = await send(
        emulator,
        client,
        request([turn("user", "hello")], system=cached_system(), model="claude-opus-4-1"),
    )

    assert switched.cache_read_input_tokens == 0
    assert switched.cache_creation_input_tokens == system_tokens(emulator)


async def test_changing_the_tools_invalidates_the_system_prefix_after_them(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    def tools(description: str) -> list[dict[str, Any]]:
        return [{"name": "lookup", "description": description, "input_schema": {"type": "object"}}]

    messages = [turn("user", "hello")]
    await send(emulator, client, request(messages, system=cached_system(), tools=tools("v1")))
    again = await send(
        emulator, client, request(messages, system=cached_system(), tools=tools("v1"))
    )
    changed = await send(
        emulator, client, request(messages, system=cached_system(), tools=tools("v2"))
    )

    assert again.cache_read_input_tokens > 0
    assert changed.cache_read_input_tokens == 0


async def test_mixed_ttls_split_the_written_tokens_by_the_breakpoint_covering_them(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = request(
        [turn("user", "question " * 50, breakpoint=True)], system=cached_system(ONE_HOUR)
    )
    usage = await send(emulator, client, body)

    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_1h_input_tokens == system_tokens(emulator)
    assert usage.cache_creation.ephemeral_5m_input_tokens == (
        emulator.count_tokens(body) - system_tokens(emulator)
    )


async def test_streamed_responses_report_the_same_cache_usage(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = request([turn("user", "hello")], system=cached_system())
    await send(emulator, client, body)
    async with client.messages.stream(**body) as stream:
        final = await stream.get_final_message()

    assert final.usage.cache_read_input_tokens == system_tokens(emulator)
    assert final.usage.input_tokens + system_tokens(emulator) == emulator.count_tokens(body)


async def test_top_level_cache_control_caches_up_to_the_last_block(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = request([turn("user", "hello")], system=LONG_SYSTEM_TEXT, cache_control=EPHEMERAL)
    first = await send(emulator, client, body)
    second = await send(emulator, client, body)

    assert first.cache_creation_input_tokens == emulator.count_tokens(body)
    assert second.cache_read_input_tokens == emulator.count_tokens(body)
    assert second.input_tokens == 0
