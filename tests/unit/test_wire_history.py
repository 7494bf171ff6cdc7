"""Request bodies kept across turns equal a full conversion, byte for byte, and cost O(new)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.attachments import AttachmentRef, attachment_part, placeholder_part, stored_content
from agent.prompt_caching import MarkedHistory, cache_breakpoints
from agent.providers import wire_body
from agent.providers.anthropic.wire import AnthropicWireHistory, full_body
from agent.providers.openai.wire import OpenAIWireHistory, full_openai_body
from agent.providers.wire_body import FREEZE_BATCH, EncodedRun

TOOLS = {
    "clock": {"name": "clock", "description": "time", "input_schema": {"type": "object"}},
    "calc": {
        "type": "function",
        "function": {"name": "calc", "description": "math", "parameters": {"type": "object"}},
    },
}
TOOL_SETS = [[], ["clock"], ["calc"], ["calc", "clock"]]

texts = st.sampled_from(["hi", "  ", "", "tail  \n", "naïve ünïcode ✓", 'quote " and \\ slash'])
call_ids = st.sampled_from(["call_0", "call_1", "toolu_a", "bad id!", "", "call_0"])
arguments = st.sampled_from(['{"x": 1}', "not json", "", "[1, 2]", '{"city": "Oslo"}'])
tool_names = st.sampled_from(["clock", "calc", "gone"])


_PHOTO = AttachmentRef("photo", "ab" * 32, "image/png", 3, width=4, height=3, shared_at=1.0e9)
_PDF = AttachmentRef("document", "cd" * 32, "application/pdf", 4, pages=2, file_name="a.pdf")
attachment_parts = st.sampled_from(
    [
        attachment_part(_PHOTO, b"png"),
        attachment_part(_PDF, b"%PDF"),
        placeholder_part(_PHOTO),
        stored_content([attachment_part(_PHOTO, b"png")])[0],  # read back without its bytes
    ]
)
"""Photos, PDFs and pruned placeholders as the gateway puts them into messages."""


@st.composite
def content(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["str", "parts", "none"]))
    if kind == "str":
        return draw(texts)
    if kind == "none":
        return None
    parts: list[Any] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "image", "attached"]))
        if kind == "text":
            parts.append({"type": "text", "text": draw(texts)})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
        else:
            parts.append(draw(attachment_parts))
    return parts


@st.composite
def message(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "user", "assistant", "assistant", "tool", "system"]))
    found: dict[str, Any] = {"role": role, "content": draw(content()), "_id": draw(st.integers())}
    if role == "assistant" and draw(st.booleans()):
        found["tool_calls"] = [
            {
                "id": draw(call_ids),
                "type": "function",
                "function": {"name": draw(tool_names), "arguments": draw(arguments)},
            }
            for _ in range(draw(st.integers(1, 3)))
        ]
    if role == "tool":
        found["tool_call_id"] = draw(call_ids)
    return found


edit = st.one_of(
    st.tuples(st.just("append"), st.lists(message(), min_size=1, max_size=6)),
    st.tuples(st.just("tools"), st.sampled_from(TOOL_SETS)),
    st.tuples(st.just("system"), texts),
    st.tuples(st.just("compact"), st.integers(0, 5)),
    st.tuples(st.just("replace_unannounced"), st.integers(0, 3)),
    st.tuples(st.just("model"), st.sampled_from(["claude-sonnet-4-5", "claude-haiku-4-5"])),
)
marking = st.sampled_from([None, ("5m", True), ("1h", True), ("5m", False)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.lists(message(), max_size=12),
    edits=st.lists(st.tuples(edit, marking), min_size=1, max_size=12),
)
def test_kept_bodies_equal_a_full_conversion_after_any_edits(
    start: list[dict[str, Any]], edits: list[tuple[tuple[str, Any], Any]]
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        # Tiny frozen segments, so short histories roll back into frozen ones too.
        patch.setattr(wire_body, "FREEZE_BATCH", 3)
        patch.setattr(wire_body, "KEEP_OPEN", 2)
        _replay_edits(start, edits)


def _replay_edits(start: list[dict[str, Any]], edits: list[tuple[tuple[str, Any], Any]]) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are Hermes."}, *start]
    wire = AnthropicWireHistory()
    compat = OpenAIWireHistory()
    tools = ["clock"]
    model = "claude-sonnet-4-5"
    for (kind, value), mark in edits:
        if kind == "append":
            history.extend(value)
        elif kind == "tools":
            tools = value
        elif kind == "system" and history and history[0]["role"] == "system":
            history[0] = {"role": "system", "content": value}
        elif kind == "compact":
            # A compaction: a new list (head, a summary, the tail) and an announced reset.
            history[:] = [*history[:1], {"role": "user", "content": "summary"}, *history[-value:]]
            wire.reset()
            compat.reset()
        elif kind == "replace_unannounced":
            # Edited copies of every message, shorter or not: detected without a reset.
            kept = history[: len(history) - value]
            history[:] = [{**m, "content": f"edited {m.get('content')}"} for m in kept]
        elif kind == "model":
            model = value
        marked = cache_breakpoints(history, mark[0], mark[1]) if mark else {}
        schemas = [TOOLS[name] for name in tools]
        body = wire.body(history, marked, schemas, model=model, max_tokens=1000).to_bytes()
        sent = MarkedHistory(history, marked).materialize()
        assert body == full_body(sent, schemas, model=model, max_tokens=1000)
        assert json.loads(body)["messages"][0]["role"] == "user"
        head = {"model": model, "max_tokens": 1000, "tools": schemas}
        kept = compat.body(history, marked, head).to_bytes()
        assert kept == full_openai_body(sent, head)


def _long_history(size: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are Hermes."}]
    for i in range(size):
        if i % 4 == 1:
            call = {"id": "call_0", "type": "function", "function": {"name": "clock"}}
            history.append({"role": "assistant", "content": None, "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": "call_0", "content": f"r{i}"})
        else:
            history.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"})
    return history


def test_a_new_turn_converts_only_the_new_messages_and_the_moved_markers() -> None:
    history = _long_history(3 * FREEZE_BATCH)
    wire = AnthropicWireHistory()
    tools = [TOOLS["clock"]]
    wire.body(history, cache_breakpoints(history, "5m", True), tools, model="m", max_tokens=9)
    before = wire.converted_messages
    # Every round reuses the id call_0 (as some local servers do): no full conversion either.
    call = {"id": "call_0", "type": "function", "function": {"name": "clock", "arguments": "{}"}}
    history.append({"role": "assistant", "content": None, "tool_calls": [call]})
    history.append({"role": "tool", "tool_call_id": "call_0", "content": "noon"})
    marked = cache_breakpoints(history, "5m", True)
    body = wire.body(history, marked, tools, model="m", max_tokens=9)
    assert wire.converted_messages - before < 12
    sent = MarkedHistory(history, marked).materialize()
    assert body.to_bytes() == full_body(sent, tools, model="m", max_tokens=9)


def test_a_changed_tool_set_or_a_shrunk_history_is_converted_afresh() -> None:
    history = _long_history(50)
    wire = AnthropicWireHistory()
    wire.body(history, {}, [TOOLS["clock"]], model="m", max_tokens=9)
    before = wire.converted_messages
    wire.body(history, {}, [], model="m", max_tokens=9)
    assert wire.converted_messages == len([m for m in history if m["role"] != "system"])
    assert before > 0
    del history[-5:]
    body = wire.body(history, {}, [], model="m", max_tokens=9).to_bytes()
    assert body == full_body(history, [], model="m", max_tokens=9)


def test_an_encoded_run_truncated_into_a_frozen_segment_keeps_whole_segments() -> None:
    run = EncodedRun()
    for i in range(3 * FREEZE_BATCH):
        run.append(str(i).encode())
    assert run.truncate(3 * FREEZE_BATCH - 2) == 3 * FREEZE_BATCH - 2
    assert run.truncate(FREEZE_BATCH + 3) == FREEZE_BATCH
    assert b"".join(run.pieces()) == b",".join(str(i).encode() for i in range(FREEZE_BATCH))


def test_a_chat_completions_turn_encodes_only_new_and_re_marked_messages() -> None:
    # OpenRouter layout: the system prompt is marked (a fresh, equal copy) every call.
    history = _long_history(2 * FREEZE_BATCH)
    wire = OpenAIWireHistory()
    head = {"model": "anthropic/claude-sonnet-4-5", "max_tokens": 9}
    wire.body(history, cache_breakpoints(history, "5m", False), head)
    before = wire.converted_messages
    history.append({"role": "user", "content": "and now?"})
    marked = cache_breakpoints(history, "5m", False)
    body = wire.body(history, marked, head).to_bytes()
    assert wire.converted_messages - before < 12
    assert body == full_openai_body(MarkedHistory(history, marked).materialize(), head)
