"""Message bookkeeping: every ``_`` key is documented, and no provider's wire body carries one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.prompt_caching import MarkedHistory, cache_breakpoints
from agent.providers.anthropic.wire import AnthropicWireHistory, full_body
from agent.providers.openai.wire import OpenAIWireHistory, full_openai_body
from agent.types import BOOKKEEPING_KEYS, BOOKKEEPING_PREFIX, MessageBookkeeping

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-4-5"
BOOKKEEPING: MessageBookkeeping = {
    "_id": 7,
    "_tokens": 12,
    "_kind": "summary",
    "_sent_at": 1_700_000_000.0,
    "_platform_message_id": "42",
}
TOOLS = [{"name": "clock", "description": "time", "input_schema": {"type": "object"}}]
KEY_IN_CODE = re.compile(
    r"""(?:\[|\.get\(|\.pop\(|\.setdefault\()\s*"(_[a-z][a-z_]*)"|_KEY\s*=\s*"(_[a-z_]+)\""""
)
"""A message key written as a literal: ``m["_id"]``, ``m.get("_kind")``, ``SENT_AT_KEY = ...``."""

texts = st.sampled_from(["hi", "", "naïve ✓", "tail \n"])
parts = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
)


@st.composite
def stored_message(draw: st.DrawFn) -> dict[str, Any]:
    """A message as the store loads it: wire keys plus every bookkeeping key."""
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    content = draw(st.one_of(texts, st.lists(parts, max_size=3), st.none()))
    found: dict[str, Any] = {"role": role, "content": content, **BOOKKEEPING}
    if role == "assistant" and draw(st.booleans()):
        call = {"id": "call_0", "type": "function", "function": {"name": "clock", "arguments": ""}}
        found["tool_calls"] = [call]
    if role == "tool":
        found["tool_call_id"] = "call_0"
    return found


def _bookkeeping_keys_in(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {key for key in value if str(key).startswith(BOOKKEEPING_PREFIX)}
        for item in value.values():
            found |= _bookkeeping_keys_in(item)
        return found
    if isinstance(value, list):
        return set().union(*(_bookkeeping_keys_in(item) for item in value))
    return set()


@settings(max_examples=100, deadline=None)
@given(history=st.lists(stored_message(), min_size=1, max_size=8))
def test_no_provider_wire_body_carries_a_bookkeeping_key(history: list[dict[str, Any]]) -> None:
    marked = cache_breakpoints(history, "5m", native_anthropic=True)
    sent = MarkedHistory(history, marked).materialize()
    bodies = [
        full_body(sent, TOOLS, model=MODEL, max_tokens=100),
        AnthropicWireHistory().body(history, marked, TOOLS, model=MODEL, max_tokens=100).to_bytes(),
        full_openai_body(sent, {"model": MODEL, "max_tokens": 100}),
        OpenAIWireHistory().body(history, marked, {"model": MODEL}).to_bytes(),
    ]
    for body in bodies:
        assert _bookkeeping_keys_in(json.loads(body)) == set()


def test_every_bookkeeping_key_the_code_writes_or_reads_is_documented() -> None:
    used: set[str] = set()
    for folder in ("agent", "gateway", "plugins"):
        for path in (ROOT / folder).rglob("*.py"):
            for match in KEY_IN_CODE.finditer(path.read_text(encoding="utf-8")):
                used.add(match.group(1) or match.group(2))
    assert used, "the scan found no bookkeeping key at all"
    assert used <= BOOKKEEPING_KEYS
