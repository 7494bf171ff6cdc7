"""The Anthropic emulator speaks the Messages API well enough for the real `anthropic` SDK.

Replies, streaming, tool use, summaries, faults, count_tokens, auth and the control API, each
driven through `anthropic.AsyncAnthropic` (or plain HTTP where the SDK cannot express it).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anthropic
import pytest

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.anthropic_replies import Reply

MODEL = "claude-sonnet-4-5"
TOOLS: list[dict[str, Any]] = [
    {
        "name": "current_time",
        "description": "Current time",
        "input_schema": {"type": "object", "properties": {}},
    },
    {
        "name": "calculator",
        "description": "Evaluate arithmetic",
        "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}}},
    },
    {
        "name": "lookup",
        "description": "Look a word up",
        "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}},
    },
]


@pytest.fixture
async def emulator() -> AsyncIterator[AnthropicEmulator]:
    emulator = AnthropicEmulator()
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.fixture
async def client(emulator: AnthropicEmulator) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=emulator.base_url, api_key="test", max_retries=0)
    yield client
    await client.close()


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def test_plain_reply_acknowledges_the_user_text_and_reports_usage(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = {"model": MODEL, "max_tokens": 200, "messages": user("Hello from the test suite")}
    message = await client.messages.create(**body)

    assert message.content[0].type == "text"
    assert message.content[0].text.startswith("Noted: Hello from the test suite.")
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL
    assert message.usage.input_tokens == emulator.count_tokens(body)
    assert message.usage.cache_read_input_tokens == 0
    assert message.usage.cache_creation_input_tokens == 0
    assert message.usage.service_tier == "standard"
    assert 35 <= message.usage.output_tokens <= 45
    assert emulator.stats.ok == 1 and emulator.stats.requests == 1
    assert emulator.requests[0].last_user_text == "Hello from the test suite"


async def test_same_request_gets_the_same_reply_even_from_another_emulator(
    client: anthropic.AsyncAnthropic,
) -> None:
    body = {"model": MODEL, "max_tokens": 200, "messages": user("Determinism please")}
    first = await client.messages.create(**body)
    async with AnthropicEmulator() as other:
        other_client = anthropic.AsyncAnthropic(base_url=other.base_url, api_key="k", max_retries=0)
        second = await other_client.messages.create(**body)
        await other_client.close()

    assert first.content[0].text == second.content[0].text


async def test_streaming_gives_the_same_text_and_final_usage_as_a_plain_call(
    client: anthropic.AsyncAnthropic,
) -> None:
    body = {"model": MODEL, "max_tokens": 200, "messages": user("Stream this one")}
    plain = await client.messages.create(**body)
    async with client.messages.stream(**body) as stream:
        streamed_text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()

    assert streamed_text == plain.content[0].text
    assert final.usage.output_tokens == plain.usage.output_tokens
    assert final.usage.input_tokens == plain.usage.input_tokens
    assert final.stop_reason == "end_turn"


async def test_raw_stream_events_come_in_the_api_order(client: anthropic.AsyncAnthropic) -> None:
    stream = await client.messages.create(
        model=MODEL, max_tokens=200, messages=user("raw events"), stream=True
    )
    kinds = [event.type async for event in stream]

    assert kinds[:2] == ["message_start", "content_block_start"]
    assert set(kinds[2:-3]) == {"content_block_delta"}
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]


async def test_max_tokens_truncates_the_reply_and_says_so(client: anthropic.AsyncAnthropic) -> None:
    message = await client.messages.create(model=MODEL, max_tokens=5, messages=user("hi"))

    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens <= 5


async def test_stop_sequences_cut_the_reply_where_they_first_occur(
    client: anthropic.AsyncAnthropic,
) -> None:
    message = await client.messages.create(
        model=MODEL, max_tokens=200, stop_sequences=["beta"], messages=user("alpha beta gamma")
    )

    assert message.content[0].text == "Noted: alpha "
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == "beta"


async def test_tool_directive_produces_a_text_and_a_tool_use_block(
    client: anthropic.AsyncAnthropic,
) -> None:
    text = 'Please [[tool:lookup {"word": "cache"}]] now'
    message = await client.messages.create(
        model=MODEL, max_tokens=200, tools=TOOLS, messages=user(text)
    )

    assert message.stop_reason == "tool_use"
    assert [block.type for block in message.content] == ["text", "tool_use"]
    call = message.content[1]
    assert call.name == "lookup" and call.input == {"word": "cache"}
    assert call.id.startswith("toolu_")


async def test_several_directives_produce_parallel_tool_calls_also_when_streamed(
    client: anthropic.AsyncAnthropic,
) -> None:
    text = '[[tool:current_time]] and [[tool:calculator {"expression": "6*7"}]]'
    async with client.messages.stream(
        model=MODEL, max_tokens=200, tools=TOOLS, messages=user(text)
    ) as stream:
        message = await stream.get_final_message()

    calls = [block for block in message.content if block.type == "tool_use"]
    assert [(c.name, c.input) for c in calls] == [
        ("current_time", {}),
        ("calculator", {"expression": "6*7"}),
    ]
    assert len({c.id for c in calls}) == 2


async def test_natural_phrases_trigger_offered_tools_only(client: anthropic.AsyncAnthropic) -> None:
    asked = await client.messages.create(
        model=MODEL, max_tokens=200, tools=TOOLS, messages=user("Please calculate 2 * (3 + 4)?")
    )
    not_offered = await client.messages.create(
        model=MODEL, max_tokens=200, tools=TOOLS[2:], messages=user("what time is it?")
    )

    assert asked.content[1].input == {"expression": "2 * (3 + 4)"}
    assert not_offered.stop_reason == "end_turn"


async def test_tool_results_are_quoted_in_the_answer(client: anthropic.AsyncAnthropic) -> None:
    first = await client.messages.create(
        model=MODEL, max_tokens=200, tools=TOOLS, messages=user("[[tool:current_time]]")
    )
    call = first.content[1]
    messages = [
        *user("[[tool:current_time]]"),
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "2030-01-02 03:04"}
            ],
        },
    ]
    answer = await client.messages.create(
        model=MODEL, max_tokens=200, tools=TOOLS, messages=messages
    )

    assert answer.stop_reason == "end_turn"
    assert answer.content[0].text == "Tool result: 2030-01-02 03:04"


async def test_structured_summary_keeps_facts_deduplicated_under_max_tokens(
    client: anthropic.AsyncAnthropic,
) -> None:
    transcript = "\n".join(
        [f"user: remember fact number {i} about the launch" for i in range(40)]
        + ["user: remember fact number 39 about the launch", "user: nothing to keep here"]
    )
    messages = user(f"Write a structured summary of:\n{transcript}")
    roomy = await client.messages.create(model=MODEL, max_tokens=4000, messages=messages)
    tight = await client.messages.create(model=MODEL, max_tokens=200, messages=messages)

    summary = roomy.content[0].text
    for heading in ("## Goal", "## Constraints & Preferences", "## Progress", "### Done",
                    "### In Progress", "### Blocked", "## Key Decisions", "## Relevant Files",
                    "## Next Steps", "## Critical Context"):  # fmt: skip
        assert heading in summary
    assert summary.count("fact number 39 ") == 1
    assert "fact number 0 " in summary and "nothing to keep" not in summary
    kept = tight.content[0].text
    assert tight.usage.output_tokens <= 200
    assert "fact number 39 " in kept and "fact number 0 " not in kept


async def test_reply_fn_replaces_the_built_in_replies(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    async def scripted(body: dict[str, Any]) -> Reply:
        return Reply([{"type": "text", "text": f"{len(body['messages'])} message(s) seen"}])

    emulator.reply_fn = scripted
    message = await client.messages.create(model=MODEL, max_tokens=50, messages=user("x"))

    assert message.content[0].text == "1 message(s) seen"


async def test_count_tokens_endpoint_matches_the_emulator_count(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = {
        "model": MODEL,
        "system": "You are terse.",
        "tools": TOOLS,
        "messages": user("How many tokens is this?"),
    }
    counted = await client.messages.count_tokens(**body)

    assert counted.input_tokens == emulator.count_tokens(body)
    assert emulator.stats.count_tokens_calls == 1 and emulator.stats.requests == 0


async def test_prompt_above_context_length_is_refused_with_its_size(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    body = {"model": MODEL, "max_tokens": 10, "messages": user("x" * 400)}
    emulator.context_length = 50

    with pytest.raises(anthropic.BadRequestError) as refused:
        await client.messages.create(**body)

    expected = f"prompt is too long: {emulator.count_tokens(body)} tokens > 50 maximum"
    assert refused.value.body["error"]["message"] == expected
    assert emulator.stats.rejected_400 == 1


@pytest.mark.parametrize(
    ("kind", "error_class"),
    [
        ("429", anthropic.RateLimitError),
        ("529", anthropic.OverloadedError),
        ("500", anthropic.InternalServerError),
        ("disconnect", anthropic.APIConnectionError),
    ],
)
async def test_each_injected_fault_surfaces_as_its_sdk_exception(
    emulator: AnthropicEmulator,
    client: anthropic.AsyncAnthropic,
    kind: str,
    error_class: type[Exception],
) -> None:
    emulator.inject_fault(kind)

    with pytest.raises(error_class):
        await client.messages.create(model=MODEL, max_tokens=10, messages=user("hi"))
    recovered = await client.messages.create(model=MODEL, max_tokens=10, messages=user("hi"))

    assert recovered.stop_reason in ("end_turn", "max_tokens")
    assert emulator.requests[0].fault == kind and emulator.stats.errors == 1


async def test_rate_limit_carries_retry_after(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    emulator.inject_fault("429", retry_after=7)

    with pytest.raises(anthropic.RateLimitError) as limited:
        await client.messages.create(model=MODEL, max_tokens=10, messages=user("hi"))

    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body["error"]["type"] == "rate_limit_error"


async def test_stream_error_breaks_a_started_stream_with_an_overloaded_error(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    emulator.inject_fault("stream_error")
    plain = await client.messages.create(model=MODEL, max_tokens=50, messages=user("hi"))

    with pytest.raises(anthropic.APIStatusError) as broken:
        async with client.messages.stream(model=MODEL, max_tokens=50, messages=user("hi")) as s:
            await s.get_final_message()

    assert plain.stop_reason == "end_turn"  # a non-streamed request is not hit
    assert broken.value.status_code == 200
    assert broken.value.body["error"]["type"] == "overloaded_error"


async def test_slow_fault_delays_the_answer_past_a_client_timeout(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    emulator.inject_fault("slow", delay=0.5)

    with pytest.raises(anthropic.APITimeoutError):
        await client.with_options(timeout=0.05).messages.create(
            model=MODEL, max_tokens=10, messages=user("hi")
        )


async def test_faults_hit_only_matching_requests_and_only_count_times(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    emulator.inject_fault("529", count=2, model="claude-haiku-4-5", contains="flaky")
    await client.messages.create(model=MODEL, max_tokens=10, messages=user("flaky"))
    await client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=user("fine"))
    outcomes = []
    for _ in range(3):
        try:
            await client.messages.create(
                model="claude-haiku-4-5", max_tokens=10, messages=user("flaky")
            )
            outcomes.append("ok")
        except anthropic.OverloadedError:
            outcomes.append("overloaded")

    assert outcomes == ["overloaded", "overloaded", "ok"]
    assert emulator.pending_faults == []


async def test_unknown_fault_kind_is_refused(emulator: AnthropicEmulator) -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        emulator.inject_fault("418")


async def test_requests_without_credentials_get_401_and_x_api_key_is_accepted(
    emulator: AnthropicEmulator,
) -> None:
    body = {"model": MODEL, "max_tokens": 10, "messages": user("hi")}
    url = f"{emulator.base_url}/v1/messages"
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=body) as anonymous:
            refusal = await anonymous.json()
        async with session.post(url, json=body, headers={"x-api-key": "k"}) as keyed:
            accepted = await keyed.json()

    assert anonymous.status == 401
    assert refusal["type"] == "error"
    assert refusal["error"]["type"] == "authentication_error"
    assert keyed.status == 200 and accepted["type"] == "message"


async def test_control_api_steers_clock_faults_context_and_reports_stats(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    control = f"{emulator.base_url}/_emulator"
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{control}/clock/advance", json={"seconds": 42}) as advanced:
            assert (await advanced.json())["now"] == 42
        async with session.post(f"{control}/faults", json={"kind": "529"}) as faulted:
            assert faulted.status == 200
        async with session.post(f"{control}/faults", json={"kind": "nope"}) as bad_fault:
            assert bad_fault.status == 400
        async with session.post(f"{control}/context_length", json={"value": 1234}) as resized:
            assert (await resized.json())["context_length"] == 1234
        with pytest.raises(anthropic.OverloadedError):
            await client.messages.create(model=MODEL, max_tokens=10, messages=user("hi"))
        await client.messages.create(model=MODEL, max_tokens=10, messages=user("hi"))
        async with session.get(f"{control}/stats") as stats_response:
            stats = await stats_response.json()
        async with session.get(f"{control}/requests") as requests_response:
            records = await requests_response.json()

    assert emulator.clock.now() == 42 and emulator.context_length == 1234
    assert stats["requests"] == 2 and stats["ok"] == 1 and stats["errors"] == 1
    assert stats["by_model"][MODEL]["output_tokens"] == emulator.stats.output_tokens > 0
    assert [record["status"] for record in records] == [529, 200]


async def test_standalone_module_serves_until_interrupted() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sandbox.anthropic_api", "--port", "0",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    banner = (await asyncio.wait_for(process.stdout.readline(), timeout=10)).decode()
    base_url = banner.split()[4]
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key="test", max_retries=0)
    try:
        message = await client.messages.create(model=MODEL, max_tokens=50, messages=user("ping"))
    finally:
        await client.close()
        process.send_signal(signal.SIGINT)
        return_code = await asyncio.wait_for(process.wait(), timeout=10)

    assert message.content[0].text.startswith("Noted: ping.")
    assert return_code == 0


async def test_truncated_fault_ends_a_stream_right_after_message_start(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    emulator.inject_fault("truncated")
    plain = await client.messages.create(model=MODEL, max_tokens=50, messages=user("hi"))

    async with client.messages.stream(model=MODEL, max_tokens=50, messages=user("hi")) as s:
        cut = await s.get_final_message()

    assert plain.content  # a non-streamed request is not hit
    assert (cut.content, cut.stop_reason) == ([], None)
    assert emulator.requests[-1].fault == "truncated"
    assert emulator.pending_faults == []


async def test_empty_fault_answers_a_complete_message_without_content_blocks(
    emulator: AnthropicEmulator, client: anthropic.AsyncAnthropic
) -> None:
    emulator.inject_fault("empty", count=2)

    plain = await client.messages.create(model=MODEL, max_tokens=50, messages=user("hi"))
    async with client.messages.stream(model=MODEL, max_tokens=50, messages=user("hi")) as s:
        streamed = await s.get_final_message()

    assert (plain.content, plain.stop_reason) == ([], "end_turn")
    assert (streamed.content, streamed.stop_reason) == ([], "end_turn")
