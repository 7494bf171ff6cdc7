"""The Anthropic emulator refuses what the real Messages API refuses, with a 400 that says why.

Bodies are sent raw through the SDK's low-level ``post`` so that even requests its typed
helpers would not build (a missing model, say) reach the server, and the SDK's own error
mapping turns each refusal into `anthropic.BadRequestError`.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
from anthropic.types import Message

from sandbox.anthropic_api import AnthropicEmulator

MODEL = "claude-sonnet-4-5"
LOOKUP_TOOL = {"name": "lookup", "input_schema": {"type": "object", "properties": {}}}
EPHEMERAL = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


@pytest.fixture
async def emulator() -> AsyncIterator[AnthropicEmulator]:
    async with AnthropicEmulator() as emulator:
        yield emulator


@pytest.fixture
async def client(emulator: AnthropicEmulator) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=emulator.base_url, api_key="test", max_retries=0)
    yield client
    await client.close()


def tool_use(tool_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {}}


def tool_result(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}


def text(value: str, cache_control: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if cache_control is not None:
        block["cache_control"] = cache_control
    return block


def valid_body() -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 32, "messages": [{"role": "user", "content": "hi"}]}


def with_changes(**changes: Any) -> dict[str, Any]:
    body = valid_body()
    for key, value in changes.items():
        if value is None:
            del body[key]
        else:
            body[key] = value
    return body


def conversation(*messages: tuple[str, Any], **extra: Any) -> dict[str, Any]:
    body = valid_body()
    body["messages"] = [{"role": role, "content": content} for role, content in messages]
    body.update(extra)
    return body


async def post(client: anthropic.AsyncAnthropic, body: dict[str, Any]) -> Message:
    return await client.post("/v1/messages", cast_to=Message, body=copy.deepcopy(body))


REFUSALS: dict[str, tuple[dict[str, Any], str]] = {
    "model is required": (with_changes(model=None), "model: Field required"),
    "max_tokens is required": (with_changes(max_tokens=None), "max_tokens: Field required"),
    "max_tokens must be positive": (with_changes(max_tokens=0), "greater than or equal to 1"),
    "messages must not be empty": (with_changes(messages=[]), "at least one message"),
    "unknown fields are refused": (with_changes(foo=1), "foo: Extra inputs are not permitted"),
    "roles are user or assistant": (
        conversation(("system", "be nice"), ("user", "hi")),
        "messages.0.role: Input should be 'user' or 'assistant'",
    ),
    "first message is the user's": (
        conversation(("assistant", "hello"), ("user", "hi")),
        'first message must use the "user" role',
    ),
    "roles alternate": (
        conversation(("user", "one"), ("user", "two")),
        'found multiple "user" roles in a row',
    ),
    "text blocks are non-empty": (
        conversation(("user", [text("")])),
        "text content blocks must be non-empty",
    ),
    "text is not only whitespace": (
        conversation(("user", "   ")),
        "text content blocks must contain non-whitespace text",
    ),
    "content strings are non-empty": (
        conversation(("user", "hi"), ("assistant", ""), ("user", "again")),
        "messages.1: all messages must have non-empty content",
    ),
    "a prefill has no trailing whitespace": (
        conversation(("user", "hi"), ("assistant", "Sure ")),
        "final assistant content cannot end with trailing whitespace",
    ),
    "every tool_use is answered in the next message": (
        conversation(
            ("user", "go"),
            ("assistant", [tool_use("toolu_a"), tool_use("toolu_b")]),
            ("user", [tool_result("toolu_a")]),
            tools=[LOOKUP_TOOL],
        ),
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_b",
    ),
    "every tool_result answers the previous message": (
        conversation(
            ("user", "go"),
            ("assistant", [tool_use("toolu_a")]),
            ("user", [tool_result("toolu_a")]),
            ("assistant", "done"),
            ("user", [tool_result("toolu_a")]),
            tools=[LOOKUP_TOOL],
        ),
        "messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a",
    ),
    "tool_use ids are unique": (
        conversation(
            ("user", "go"),
            ("assistant", [tool_use("toolu_a")]),
            ("user", [tool_result("toolu_a")]),
            ("assistant", [tool_use("toolu_a")]),
            ("user", [tool_result("toolu_a")]),
            tools=[LOOKUP_TOOL],
        ),
        "messages.3.content.0: `tool_use` ids must be unique",
    ),
    "tool_use names are offered tools": (
        conversation(
            ("user", "go"),
            ("assistant", [tool_use("toolu_a", name="missing")]),
            ("user", [tool_result("toolu_a")]),
            tools=[LOOKUP_TOOL],
        ),
        "tool 'missing' is not one of the provided tools",
    ),
    "tool_choice names an offered tool": (
        with_changes(tools=[LOOKUP_TOOL], tool_choice={"type": "tool", "name": "missing"}),
        "Tool 'missing' not found in provided tools",
    ),
    "five breakpoints are one too many": (
        conversation(
            ("user", [text(f"part {i}", EPHEMERAL) for i in range(3)]),
            system=[text("sys a", EPHEMERAL), text("sys b", EPHEMERAL)],
        ),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    "cache_control type is ephemeral": (
        conversation(("user", [text("hi", {"type": "forever"})])),
        "messages.0.content.0.cache_control.type: Input should be 'ephemeral'",
    ),
    "ttl is 5m or 1h": (
        conversation(("user", [text("hi", {"type": "ephemeral", "ttl": "2h"})])),
        "cache_control.ttl: Input should be '5m' or '1h'",
    ),
    "a 1h breakpoint never follows a 5m one": (
        conversation(("user", [text("hi", ONE_HOUR)]), system=[text("sys", EPHEMERAL)]),
        "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block",
    ),
}


@pytest.mark.parametrize(("body", "expected"), REFUSALS.values(), ids=REFUSALS.keys())
async def test_invalid_request_is_refused_with_a_400_naming_the_problem(
    emulator: AnthropicEmulator,
    client: anthropic.AsyncAnthropic,
    body: dict[str, Any],
    expected: str,
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        await post(client, body)

    error = refused.value.body["error"]
    assert refused.value.status_code == 400
    assert error["type"] == "invalid_request_error"
    assert expected in error["message"]
    assert emulator.stats.rejected_400 == 1 and emulator.requests[0].status == 400


ACCEPTED: dict[str, dict[str, Any]] = {
    "a final assistant prefill may be empty": conversation(("user", "hi"), ("assistant", "")),
    "answered parallel tool calls": conversation(
        ("user", "go"),
        ("assistant", [text("calling"), tool_use("toolu_a"), tool_use("toolu_b")]),
        ("user", [tool_result("toolu_b"), tool_result("toolu_a"), text("and?")]),
        tools=[LOOKUP_TOOL],
    ),
    "four breakpoints, 1h before 5m": conversation(
        ("user", [text("a", EPHEMERAL), text("b", EPHEMERAL)]),
        system=[text("sys a", ONE_HOUR), text("sys b", EPHEMERAL)],
    ),
}


@pytest.mark.parametrize("body", ACCEPTED.values(), ids=ACCEPTED.keys())
async def test_valid_edge_cases_are_accepted(
    client: anthropic.AsyncAnthropic, body: dict[str, Any]
) -> None:
    message = await post(client, body)

    assert message.type == "message"


async def test_relaxed_alternation_accepts_consecutive_user_messages() -> None:
    async with AnthropicEmulator(strict_alternation=False) as relaxed:
        client = anthropic.AsyncAnthropic(base_url=relaxed.base_url, api_key="t", max_retries=0)
        message = await post(client, conversation(("user", "one"), ("user", "two")))
        await client.close()

    assert message.content[0].text.startswith("Noted: two.")
