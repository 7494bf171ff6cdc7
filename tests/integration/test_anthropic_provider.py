"""The native Anthropic provider driving the real ``anthropic`` SDK against the local emulator."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.prompt_caching import apply_anthropic_cache_control
from agent.providers import build_provider
from agent.providers.anthropic.provider import AnthropicProvider
from agent.types import IncompleteResponseError, PromptTooLongError, ProviderError
from sandbox.anthropic_api import AnthropicEmulator

MODEL = "claude-sonnet-4-5"
API_KEY = "sk-ant-test-secret"
CLOCK_TOOL = {
    "name": "clock",
    "description": "The current time in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
LONG_SYSTEM_PROMPT = "You are a careful assistant. " * 300  # above Sonnet's 1,024-token minimum


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in [n for n in os.environ if n.startswith("ANTHROPIC_")]:
        monkeypatch.delenv(name)


@pytest.fixture
async def emulator() -> AsyncIterator[AnthropicEmulator]:
    emu = AnthropicEmulator(context_length=20_000)
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def provider(emulator: AnthropicEmulator) -> AsyncIterator[AnthropicProvider]:
    built = build_provider(
        "anthropic", model=MODEL, api_key=API_KEY, base_url=emulator.base_url, max_retries=0
    )
    assert isinstance(built, AnthropicProvider)
    yield built
    await built.aclose()


def cached_conversation(turns: list[dict[str, Any]], ttl: str = "5m") -> list[dict[str, Any]]:
    history = [{"role": "system", "content": LONG_SYSTEM_PROMPT}, *turns]
    return apply_anthropic_cache_control(history, cache_ttl=ttl, native_anthropic=True)


async def test_a_text_reply_comes_back_streamed_as_an_assistant_message(
    provider: AnthropicProvider, emulator: AnthropicEmulator
) -> None:
    response = await provider.complete(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}],
        max_tokens=200,
    )
    assert response.message["role"] == "assistant"
    assert response.message["content"].startswith("Noted: hello there.")
    assert response.stop_reason == "end_turn"
    assert response.usage.model == MODEL
    assert emulator.requests[-1].stream is True


async def test_a_tool_call_round_trip_ends_in_a_final_answer(
    provider: AnthropicProvider, emulator: AnthropicEmulator
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": 'time please [[tool:clock {"city": "Oslo"}]]'}
    ]
    first = await provider.complete(history, tools=[CLOCK_TOOL], max_tokens=200)
    (tool_call,) = first.tool_calls
    assert tool_call["function"]["name"] == "clock"
    assert json.loads(tool_call["function"]["arguments"]) == {"city": "Oslo"}
    assert first.stop_reason == "tool_use"

    history += [
        first.message,
        {"role": "tool", "tool_call_id": tool_call["id"], "name": "clock", "content": "09:30"},
    ]
    final = await provider.complete(history, tools=[CLOCK_TOOL], max_tokens=200)
    assert final.message["content"] == "Tool result: 09:30"
    assert final.tool_calls == []
    assert emulator.requests[-1].body["tools"] == [CLOCK_TOOL]


async def test_usage_is_normalised_and_matches_the_servers_own_counts(
    provider: AnthropicProvider, emulator: AnthropicEmulator
) -> None:
    messages = cached_conversation([{"role": "user", "content": "hi"}])
    first = (await provider.complete(messages, max_tokens=100)).usage
    second = (await provider.complete(messages, max_tokens=100)).usage
    for usage, record in zip((first, second), emulator.requests[-2:], strict=True):
        assert usage.prompt_tokens == record.prompt_tokens
        assert usage.input_tokens == record.usage["input_tokens"]
        assert usage.cache_read_tokens == record.usage["cache_read_input_tokens"]
        assert usage.cache_write_tokens == record.usage["cache_creation_input_tokens"]
        assert usage.output_tokens == record.usage["output_tokens"]
    assert first.prompt_tokens == second.prompt_tokens
    # Most of the second prompt is a cache read: input_tokens alone would undercount it badly.
    assert second.input_tokens < 0.1 * second.prompt_tokens


async def test_a_repeated_prompt_with_cache_markers_reads_from_the_cache(
    provider: AnthropicProvider,
) -> None:
    messages = cached_conversation([{"role": "user", "content": "first question"}])
    first = (await provider.complete(messages, max_tokens=100)).usage
    second = (await provider.complete(messages, max_tokens=100)).usage
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 0
    assert second.cache_read_tokens > 0 and second.cache_write_tokens == 0


async def test_the_next_turn_of_a_tool_conversation_reads_the_previous_turns_prefix(
    provider: AnthropicProvider,
) -> None:
    turns: list[dict[str, Any]] = [
        {"role": "user", "content": 'check [[tool:clock {"city": "Rome"}]]'}
    ]
    first = await provider.complete(cached_conversation(turns), tools=[CLOCK_TOOL], max_tokens=200)
    (tool_call,) = first.tool_calls
    turns += [first.message, {"role": "tool", "tool_call_id": tool_call["id"], "content": "10:00"}]
    second = await provider.complete(cached_conversation(turns), tools=[CLOCK_TOOL], max_tokens=200)
    assert second.usage.cache_read_tokens >= first.usage.cache_write_tokens > 0


async def test_one_hour_breakpoints_are_reported_as_one_hour_writes(
    provider: AnthropicProvider,
) -> None:
    messages = cached_conversation([{"role": "user", "content": "hi"}], ttl="1h")
    usage = (await provider.complete(messages, max_tokens=100)).usage
    assert usage.cache_write_1h_tokens == usage.cache_write_tokens > 0


async def test_a_messy_history_is_still_a_request_the_api_accepts(
    provider: AnthropicProvider, emulator: AnthropicEmulator
) -> None:
    interrupted_call = {
        "id": "toolu_gone",
        "type": "function",
        "function": {"name": "clock", "arguments": "{not json"},
    }
    messy = [
        {"role": "assistant", "content": "Welcome back.", "_id": 3},
        {"role": "user", "content": ""},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [interrupted_call]},
        {"role": "tool", "tool_call_id": "toolu_other", "content": "stray result"},
        {"role": "user", "content": "never mind"},
    ]
    response = await provider.complete(messy, tools=[CLOCK_TOOL], max_tokens=200)
    assert response.message["content"].startswith("Tool result:")
    assert emulator.requests[-1].status == 200
    assert '"_id"' not in json.dumps(emulator.requests[-1].body)


async def test_the_model_can_be_overridden_per_call(
    provider: AnthropicProvider, emulator: AnthropicEmulator
) -> None:
    response = await provider.complete(
        [{"role": "user", "content": "hi"}], max_tokens=50, model="claude-haiku-4-5"
    )
    assert emulator.requests[-1].model == "claude-haiku-4-5"
    assert response.usage.model == "claude-haiku-4-5"


async def test_a_prompt_beyond_the_context_window_raises_prompt_too_long(
    provider: AnthropicProvider,
) -> None:
    with pytest.raises(PromptTooLongError) as raised:
        await provider.complete([{"role": "user", "content": "word " * 40_000}], max_tokens=100)
    assert raised.value.status == 400
    assert not raised.value.retryable


@pytest.mark.parametrize(
    ("kind", "status"), [("529", 529), ("429", 429), ("500", 500), ("stream_error", 200)]
)
async def test_overload_rate_limit_and_stream_errors_are_retryable(
    provider: AnthropicProvider, emulator: AnthropicEmulator, kind: str, status: int
) -> None:
    emulator.inject_fault(kind, count=1, retry_after=0)
    with pytest.raises(ProviderError) as raised:
        await provider.complete([{"role": "user", "content": "hi"}], max_tokens=50)
    assert raised.value.retryable
    assert raised.value.status == status
    assert not isinstance(raised.value, PromptTooLongError)
    assert API_KEY not in str(raised.value)
    # The fault is used up: the next call succeeds.
    assert (await provider.complete([{"role": "user", "content": "hi"}], max_tokens=50)).message


@pytest.mark.parametrize("fault", ["truncated", "cut"])
async def test_a_stream_cut_off_after_message_start_is_an_incomplete_answer(
    provider: AnthropicProvider, emulator: AnthropicEmulator, fault: str
) -> None:
    emulator.inject_fault(fault)
    with pytest.raises(IncompleteResponseError) as raised:
        await provider.complete([{"role": "user", "content": "hi"}], max_tokens=50)
    assert raised.value.retryable


async def test_an_answer_without_content_blocks_is_an_empty_message(
    provider: AnthropicProvider, emulator: AnthropicEmulator
) -> None:
    emulator.inject_fault("empty")
    response = await provider.complete([{"role": "user", "content": "hi"}], max_tokens=50)
    assert (response.message["content"], response.tool_calls) == ("", [])


async def test_a_dropped_connection_is_retryable(
    provider: AnthropicProvider, emulator: AnthropicEmulator
) -> None:
    emulator.inject_fault("disconnect", count=1)
    with pytest.raises(ProviderError) as raised:
        await provider.complete([{"role": "user", "content": "hi"}], max_tokens=50)
    assert raised.value.retryable


async def test_an_invalid_request_is_not_retryable(provider: AnthropicProvider) -> None:
    marker = {"type": "ephemeral"}
    too_many_breakpoints = [
        {
            "role": "user",
            "content": [{"type": "text", "text": f"part {n}", "cache_control": marker}],
        }
        for n in range(5)
    ]
    with pytest.raises(ProviderError) as raised:
        await provider.complete(too_many_breakpoints, max_tokens=50)
    assert raised.value.status == 400
    assert not raised.value.retryable
    assert not isinstance(raised.value, PromptTooLongError)


async def test_the_provider_never_shows_its_api_key(provider: AnthropicProvider) -> None:
    assert provider.native_anthropic and provider.name == "anthropic"
    assert API_KEY not in repr(provider)


async def test_a_server_requested_retry_wait_is_capped(provider: AnthropicProvider) -> None:
    # The SDK honours any retry-after; the provider's client cuts it so a worker is not parked
    # for an hour. This reaches into the SDK hook the cap overrides, so an SDK change shows here.
    from anthropic._models import FinalRequestOptions
    from httpx2 import Headers

    from agent.providers.base import MAX_RETRY_WAIT_SECONDS

    options = FinalRequestOptions.construct(method="post", url="/v1/messages")
    client = provider._client
    hour = client._calculate_retry_timeout(1, options, Headers({"retry-after": "3600"}))
    short = client._calculate_retry_timeout(1, options, Headers({"retry-after": "2"}))
    assert (hour, short) == (MAX_RETRY_WAIT_SECONDS, 2.0)
