"""The chat-completions provider driving the real ``openai`` SDK against the local emulator."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.attachments import AttachmentRef, attachment_part
from agent.prompt_caching import apply_anthropic_cache_control
from agent.providers import build_provider
from agent.providers.openai.provider import OpenAICompatProvider
from agent.types import PromptTooLongError, ProviderError
from sandbox.openai_api import OpenAIEmulator

CLOCK_TOOL = {
    "name": "clock",
    "description": "The current time in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
LONG_SYSTEM_PROMPT = "You are a careful assistant. " * 300  # well above 1,024 emulated tokens


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in [n for n in os.environ if n.startswith("OPENAI_")]:
        monkeypatch.delenv(name)


@pytest.fixture
async def emulator() -> AsyncIterator[OpenAIEmulator]:
    emu = OpenAIEmulator(context_length=8_000)
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def provider(emulator: OpenAIEmulator) -> AsyncIterator[OpenAICompatProvider]:
    built = build_provider(
        "openrouter",
        model="anthropic/claude-sonnet-4.5",
        api_key="sk-test",
        base_url=emulator.base_url,
        max_retries=0,
    )
    assert isinstance(built, OpenAICompatProvider)
    yield built
    await built.aclose()


async def test_a_text_reply_comes_back_as_an_assistant_message(
    provider: OpenAICompatProvider,
) -> None:
    response = await provider.complete(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}],
        max_tokens=100,
    )
    assert response.message == {"role": "assistant", "content": "Echo: hello there"}
    assert response.stop_reason == "stop"
    assert response.tool_calls == []


async def test_a_tool_call_round_trip_ends_in_a_final_answer(
    provider: OpenAICompatProvider, emulator: OpenAIEmulator
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": 'time please [[tool:clock {"city": "Oslo"}]]'}
    ]
    first = await provider.complete(history, tools=[CLOCK_TOOL], max_tokens=100)
    (tool_call,) = first.tool_calls
    assert tool_call["function"]["name"] == "clock"
    assert json.loads(tool_call["function"]["arguments"]) == {"city": "Oslo"}
    assert first.stop_reason == "tool_calls"

    history += [
        first.message,
        {"role": "tool", "tool_call_id": tool_call["id"], "name": "clock", "content": "09:30"},
    ]
    final = await provider.complete(history, tools=[CLOCK_TOOL], max_tokens=100)
    assert final.message["content"] == "Tool result: 09:30"
    sent_tools = emulator.requests[0]["tools"]
    assert sent_tools == [
        {
            "type": "function",
            "function": {
                "name": "clock",
                "description": "The current time in a city.",
                "parameters": CLOCK_TOOL["input_schema"],
            },
        }
    ]


async def test_a_tool_result_with_an_image_goes_out_as_text_naming_the_image(
    provider: OpenAICompatProvider, emulator: OpenAIEmulator
) -> None:
    ref = AttachmentRef("tool result", "ab" * 32, "image/png", 70, width=1, height=1)
    picture = attachment_part(ref, b"\x89PNG not shown")
    history: list[dict[str, Any]] = [{"role": "user", "content": "[[tool:clock {}]] draw"}]
    first = await provider.complete(history, tools=[CLOCK_TOOL], max_tokens=100)
    (tool_call,) = first.tool_calls
    content = [{"type": "text", "text": "a chart"}, picture]
    history += [
        first.message,
        {"role": "tool", "tool_call_id": tool_call["id"], "name": "clock", "content": content},
    ]
    final = await provider.complete(history, tools=[CLOCK_TOOL], max_tokens=100)
    sent = emulator.requests[-1]["messages"][-1]
    assert sent["content"] == "a chart\n[image: tool result, 1x1]"
    assert final.message["content"] == "Tool result: a chart\n[image: tool result, 1x1]"


async def test_bookkeeping_keys_are_not_sent_but_content_part_markers_are(
    provider: OpenAICompatProvider, emulator: OpenAIEmulator
) -> None:
    marked = apply_anthropic_cache_control(
        [
            {"role": "system", "content": "s", "_id": 1},
            {"role": "user", "content": "q", "_tokens": 3},
        ]
    )
    await provider.complete(marked, max_tokens=50)
    sent = emulator.requests[-1]["messages"]
    assert all(not key.startswith("_") for message in sent for key in message)
    assert sent[1]["content"] == [
        {"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}
    ]


async def test_usage_is_normalised_and_matches_the_servers_own_counts(
    provider: OpenAICompatProvider, emulator: OpenAIEmulator
) -> None:
    messages = apply_anthropic_cache_control(
        [{"role": "system", "content": LONG_SYSTEM_PROMPT}, {"role": "user", "content": "hi"}]
    )
    usage = (await provider.complete(messages, max_tokens=100)).usage
    reported = emulator.last_usage
    assert reported is not None
    details = reported["prompt_tokens_details"]
    assert usage.prompt_tokens == reported["prompt_tokens"]
    assert usage.cache_read_tokens == details["cached_tokens"]
    assert usage.cache_write_tokens == details["cache_write_tokens"]
    assert usage.input_tokens == (
        reported["prompt_tokens"] - details["cached_tokens"] - details["cache_write_tokens"]
    )
    assert usage.output_tokens == reported["completion_tokens"]
    assert usage.model == "anthropic/claude-sonnet-4.5"


async def test_a_repeated_prompt_with_cache_markers_reads_from_the_cache(
    provider: OpenAICompatProvider,
) -> None:
    history = [
        {"role": "system", "content": LONG_SYSTEM_PROMPT},
        {"role": "user", "content": "first question"},
    ]
    marked = apply_anthropic_cache_control(history, native_anthropic=False)
    first = (await provider.complete(marked, max_tokens=100)).usage
    second = (await provider.complete(marked, max_tokens=100)).usage
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 0
    assert second.cache_read_tokens > 0
    assert second.cache_read_tokens + second.input_tokens + second.cache_write_tokens == (
        first.prompt_tokens
    )


async def test_a_prompt_beyond_the_context_window_raises_prompt_too_long(
    provider: OpenAICompatProvider,
) -> None:
    huge = [{"role": "user", "content": "word " * 40_000}]
    with pytest.raises(PromptTooLongError) as raised:
        await provider.complete(huge, max_tokens=100)
    assert raised.value.status == 400
    assert not raised.value.retryable


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_overload_and_rate_limit_errors_are_retryable(
    provider: OpenAICompatProvider, emulator: OpenAIEmulator, status: int
) -> None:
    emulator.inject_fault(status, count=1)
    with pytest.raises(ProviderError) as raised:
        await provider.complete([{"role": "user", "content": "hi"}], max_tokens=10)
    assert raised.value.retryable
    assert raised.value.status == status
    assert not isinstance(raised.value, PromptTooLongError)
    # The fault is used up: the next call succeeds.
    assert (await provider.complete([{"role": "user", "content": "hi"}], max_tokens=10)).message


async def test_an_error_reported_inside_a_200_response_is_a_typed_error(
    provider: OpenAICompatProvider, emulator: OpenAIEmulator
) -> None:
    emulator.inject_fault(503, count=1, in_body=True)
    with pytest.raises(ProviderError) as raised:
        await provider.complete([{"role": "user", "content": "hi"}], max_tokens=10)
    assert raised.value.status == 503
    assert raised.value.retryable


async def test_an_invalid_request_is_not_retryable(provider: OpenAICompatProvider) -> None:
    orphan = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "missing", "content": "x"},
    ]
    with pytest.raises(ProviderError) as raised:
        await provider.complete(orphan, max_tokens=10)
    assert raised.value.status == 400
    assert not raised.value.retryable
    assert not isinstance(raised.value, PromptTooLongError)


async def test_an_unreachable_endpoint_is_a_retryable_error_without_the_api_key() -> None:
    emu = OpenAIEmulator()
    base_url = await emu.start()
    await emu.stop()
    provider = build_provider(
        "openai_compat", model="m", api_key="sk-secret-value", base_url=base_url, max_retries=0
    )
    try:
        with pytest.raises(ProviderError) as raised:
            await provider.complete([{"role": "user", "content": "hi"}], max_tokens=10)
    finally:
        await provider.aclose()
    assert raised.value.retryable
    assert "sk-secret-value" not in str(raised.value)
    assert "sk-secret-value" not in repr(provider)


def test_build_provider_names_the_kind_and_refuses_unknown_ones() -> None:
    local = build_provider(
        "openai_compat", model="m", api_key="k", base_url="http://127.0.0.1:1/v1"
    )
    assert (local.name, local.native_anthropic) == ("openai_compat", False)
    with pytest.raises(ValueError):
        build_provider("gemini", model="m", api_key="k", base_url=None)
