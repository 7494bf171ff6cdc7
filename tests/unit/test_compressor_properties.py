"""Properties of the compressor over hundreds of random sessions.

Sessions mix user/assistant turns, assistant messages with one to three parallel tool calls and
their results, huge tool outputs, repeated outputs, empty and unicode contents, and ``None``
content on tool-calling messages. Whatever the session and whatever the summary model does
(answer, refuse the prompt as too long, stay overloaded), the compacted context is well formed,
keeps what must be kept verbatim, never grows, and loses nothing silently.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent.compressor.context_compressor import ContextCompressor
from agent.engines.toolkit.boundaries import SUMMARY_PREFIX
from agent.engines.toolkit.tool_output_pruning import (
    DUPLICATE_OUTPUT_TEMPLATE,
    PRUNED_OUTPUT_PREFIX,
    call_arguments_text,
    pruned_input,
)
from agent.providers.anthropic.convert import to_anthropic_request
from agent.tokens import cache_messages_tokens
from agent.types import Message, PromptTooLongError, ProviderError
from sandbox.anthropic_validation import validate_request

CONTEXT_LENGTH = 4_000
"""Small, so that random sessions cross the threshold (2,000 tokens) often."""
TOOLS = ("read_file", "shell", "grep")
SHORT_SUMMARY = "## Goal\n- Keep going.\n## Progress\n### Done\n- Earlier work."

short_text = st.text(max_size=60)
huge_text = st.builds(
    lambda s, n: (s or "λ") * n, st.text(min_size=1, max_size=12), st.integers(200, 900)
)
content = st.one_of(st.just(""), short_text, short_text, huge_text)


@st.composite
def sessions(draw: st.DrawFn, *, small_ends: bool = False) -> list[Message]:
    """A random session: system prompt, then user turns with tool loops and replies.

    With ``small_ends`` the first exchange and the last turn are short (only what lies between
    can be big), so a compaction always has room to work.
    """
    ids = itertools.count(1)
    calls = itertools.count(1)
    outputs: list[str] = []
    messages: list[Message] = [
        {"role": "system", "content": "You are helpful. ☀", "_id": next(ids)}
    ]
    turns = draw(st.integers(3 if small_ends else 1, 8))
    for turn in range(turns):
        edge = small_ends and turn in (0, turns - 1)
        user_text = draw(short_text if edge else content)
        messages.append({"role": "user", "content": user_text, "_id": next(ids)})
        if small_ends and turn == turns - 1:
            messages.append({"role": "assistant", "content": draw(short_text), "_id": next(ids)})
            break
        for _ in range(draw(st.integers(0, 3))):
            tool_calls = []
            for _ in range(draw(st.integers(1, 3))):
                name = draw(st.sampled_from(TOOLS))
                arguments = json.dumps({"arg": draw(short_text)})
                call_id = f"call_{next(calls)}"
                tool_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
            text = draw(st.one_of(st.none(), short_text))
            if edge:  # the first exchange: its text is small, its outputs may be huge
                text = draw(short_text)
            messages.append(
                {"role": "assistant", "content": text, "tool_calls": tool_calls, "_id": next(ids)}
            )
            for call in tool_calls:
                repeat = outputs and draw(st.integers(0, 4)) == 0
                output = draw(st.sampled_from(outputs)) if repeat else draw(content)
                outputs.append(output)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": output,
                        "_id": next(ids),
                    }
                )
        reply = draw(short_text if edge else content)
        messages.append({"role": "assistant", "content": reply, "_id": next(ids)})
    return messages


class ScriptedSummaryModel:
    """The summary model: answers, refuses once as too long, or stays overloaded."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.prompts: list[str] = []

    async def __call__(self, task: str, messages: list[Message], max_tokens: int | None) -> str:
        self.prompts.append(messages[0]["content"])
        if self.mode == "overloaded":
            raise ProviderError("overloaded", status=529, retryable=True)
        if self.mode == "too_long_once" and len(self.prompts) == 1:
            raise PromptTooLongError("prompt is too long", status=400)
        return SHORT_SUMMARY


async def no_sleep(seconds: float) -> None:
    return None


def assert_tool_pairs_intact(messages: list[Message]) -> None:
    """Every result directly follows its call's message; every call is answered there."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", f"orphan tool result at {index}"
        index += 1
        wanted = [str(c["id"]) for c in message.get("tool_calls") or []]
        answered = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answered.append(str(messages[index]["tool_call_id"]))
            index += 1
        assert sorted(answered) == sorted(wanted)


def text_of(message: Message) -> str:
    value = message.get("content")
    return value if isinstance(value, str) else ""


def call_ids(message: Message) -> tuple[str, ...]:
    return tuple(str(call["id"]) for call in message.get("tool_calls") or [])


def assert_nothing_silently_lost(
    before: list[Message], after: list[Message], model: ScriptedSummaryModel, outcome: str
) -> None:
    """A message gone from the context was summarised (its text reached the summary model),
    replaced by a placeholder (a cleared output, or a call message whose large inputs were
    cleared), or, for a degraded compaction, covered by the fallback."""
    kept = {m["_id"] for m in after if "_id" in m}
    placeholders = {m.get("tool_call_id") for m in after if "_id" not in m and m["role"] == "tool"}
    rewritten_calls = {call_ids(m) for m in after if "_id" not in m and m.get("tool_calls")}
    sent = "\n".join(model.prompts)
    for message in before[1:]:
        if message["_id"] in kept or message.get("tool_call_id") in placeholders:
            continue
        if message.get("tool_calls") and call_ids(message) in rewritten_calls:
            continue
        assert outcome in ("summarized", "chunked", "fallback")
        if outcome == "fallback":
            continue
        text = text_of(message).strip()
        if text:
            assert text[:20] in sent
        for call in message.get("tool_calls") or []:
            assert f"as call {call['id']}" in sent


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    session=sessions(),
    protect_last_n=st.sampled_from([2, 4, 20]),
    summary_context_length=st.sampled_from([None, 2_500]),
    mode=st.sampled_from(["ok", "ok", "too_long_once", "overloaded"]),
)
def test_compaction_properties(
    session: list[Message], protect_last_n: int, summary_context_length: int | None, mode: str
) -> None:
    model = ScriptedSummaryModel(mode)
    engine = ContextCompressor(
        CONTEXT_LENGTH,
        protect_last_n=protect_last_n,
        call_llm=model,
        summary_context_length=summary_context_length,
        sleep=no_sleep,
    )
    original = copy.deepcopy(session)
    tokens_before = cache_messages_tokens(session)
    result = asyncio.run(engine.compact(session, "agent"))
    after = result.messages
    assert result is not None

    # The input is left alone (only the token-count cache may be added).
    assert [{k: v for k, v in m.items() if k != "_tokens"} for m in session] == original

    # (a) no orphan tool calls or results; the provider request is one the API accepts.
    assert_tool_pairs_intact(after)
    request: dict[str, Any] = to_anthropic_request(after, [{"name": n} for n in TOOLS])
    validate_request({"model": "claude-test", "max_tokens": 100, **request})

    # (b) system prompt, first exchange and the last user message kept verbatim.
    assert isinstance(after[0]["content"], str)
    assert after[0]["content"].startswith(session[0]["content"])
    for index in (1, 2):
        assert after[index] is session[index]
    last_user = max(i for i, m in enumerate(session) if m["role"] == "user")
    assert any(m is session[last_user] for m in after)

    # (c) never bigger; smaller whenever anything was done; unchanged when skipped.
    tokens_after = cache_messages_tokens(after)
    assert tokens_after <= tokens_before
    if result.outcome == "skipped":
        assert all(a is b for a, b in zip(after, session, strict=True))
    else:
        assert tokens_after < tokens_before
    # (d) what left the context lies in the compacted range and was not silently dropped.
    kept = {m["_id"] for m in after if "_id" in m}
    gone = [m["_id"] for m in session[1:] if m["_id"] not in kept]
    for message_id in gone:
        assert result.first_compacted_id <= message_id <= result.last_compacted_id  # type: ignore[operator]
    assert_nothing_silently_lost(session, after, model, result.outcome)

    # (e) the summary alternates roles with both neighbours (tool results count as user turns)
    # unless that needs moving more than the tail budget; then it is a user turn, which the
    # provider merges with its neighbour.
    seams = [i for i, m in enumerate(after) if m.get("_kind") == "summary"]
    assert len(seams) <= 1
    for at in seams:
        assert after[at]["content"].startswith(SUMMARY_PREFIX)
        assert result.degraded == (result.outcome == "fallback")
        neighbours = [after[at - 1], *after[at + 1 : at + 2]]
        roles = ["user" if m["role"] == "tool" else m["role"] for m in neighbours]
        event(f"summary seam alternates: {after[at]['role'] not in roles}")
        if after[at]["role"] in roles:
            assert after[at]["role"] == "user"

    # Rewritten calls keep their ids and name; a cleared input says where the original is.
    originals = {str(c["id"]): c for m in session for c in m.get("tool_calls") or []}
    for message in after:
        for call in message.get("tool_calls") or [] if "_id" not in message else []:
            original = originals[str(call["id"])]
            assert call["function"]["name"] == original["function"]["name"]
            if call != original:
                arguments = call_arguments_text(call)
                assert arguments == pruned_input(str(call["id"]), call_arguments_text(original))

    # Rewritten tool outputs say what they were.
    for message in after:
        if message["role"] == "tool" and "_id" not in message:
            assert text_of(message).startswith(PRUNED_OUTPUT_PREFIX) or text_of(message) in {
                DUPLICATE_OUTPUT_TEMPLATE.format(tool=t) for t in TOOLS
            } | {"[Result not available: compacted]"}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    session=sessions(small_ends=True),
    protect_last_n=st.sampled_from([2, 4, 20]),
    mode=st.sampled_from(["ok", "too_long_once", "overloaded"]),
)
def test_a_session_with_room_to_compact_is_brought_under_the_threshold(
    session: list[Message], protect_last_n: int, mode: str
) -> None:
    engine = ContextCompressor(
        CONTEXT_LENGTH,
        protect_last_n=protect_last_n,
        call_llm=ScriptedSummaryModel(mode),
        sleep=no_sleep,
    )
    tokens_before = cache_messages_tokens(session)
    result = asyncio.run(engine.compact(session, "agent"))
    after = result.messages
    assert result is not None
    event(f"above threshold: {tokens_before > engine.threshold_tokens}")
    if tokens_before > engine.threshold_tokens:
        assert result.outcome != "skipped"
        assert cache_messages_tokens(after) < engine.threshold_tokens
        assert not engine.should_compress(cache_messages_tokens(after))
