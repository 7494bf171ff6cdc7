"""Deterministic replies of the Anthropic emulator: the same request always gets the same answer.

`default_reply` picks, from the last user message:
- tool results -> ``"Tool result: <first 100 chars of each result>"``;
- "structured summary" in the text -> a markdown compaction summary (see `anthropic_summary`);
- ``[[tool:NAME {json args}]]`` directives for offered tools -> a text block plus one tool_use
  block per directive (stop_reason "tool_use"); without a directive, "what time" calls an offered
  ``current_time`` and "calculate <expr>" an offered ``calculator``;
- otherwise ``"Noted: <first 80 chars of the text>. "`` padded with filler to about
  ``reply_tokens`` tokens.
`fit_reply` then applies ``stop_sequences`` and ``max_tokens`` to whatever a reply function made.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox.anthropic_prompt import (
    CHARS_PER_TOKEN,
    canonical_json,
    message_blocks,
    output_tokens,
    text_tokens,
)
from sandbox.anthropic_summary import is_summary_request, structured_summary

DEFAULT_REPLY_TOKENS = 40
NOTED_SNIPPET_CHARS = 80
TOOL_RESULT_SNIPPET_CHARS = 100
TOOL_ID_HEX_CHARS = 24
TOOL_DIRECTIVE = re.compile(r"\[\[tool:([A-Za-z0-9_-]+)\s*(\{.*?\})?\s*\]\]", re.DOTALL)
TIME_TRIGGER = "what time"
CALCULATE_TRIGGER = re.compile(r"\bcalculate\s+([^\n]+)", re.IGNORECASE)
FILLER_WORDS = (
    "steady", "context", "window", "cache", "prefix", "session", "gateway", "reply",
    "careful", "summary", "token", "budget", "message", "channel", "thread", "queue",
    "worker", "store", "model", "request", "answer", "detail", "signal", "record",
    "useful", "clear", "short", "plain", "local", "quiet", "simple", "stable",
)  # fmt: skip


@dataclass(frozen=True)
class Reply:
    """What the emulated model answers: content blocks and why it stopped."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    stop_sequence: str | None = None


ReplyFn = Callable[[dict[str, Any]], Reply | str | Awaitable[Reply | str]]
"""A pluggable reply function: request body in, `Reply` (or plain text) out, sync or async."""


def request_seed(body: dict[str, Any]) -> str:
    """A stable digest of what the model would see, so equal requests get equal replies."""
    seen = {key: body.get(key) for key in ("model", "system", "tools", "messages")}
    return hashlib.sha256(canonical_json(seen).encode()).hexdigest()


def last_user_message(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last message with role user (a final assistant prefill is skipped)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message
    return None


def user_text(message: dict[str, Any] | None) -> str:
    """The text blocks of a message joined by newlines (tool results left out)."""
    if message is None:
        return ""
    blocks = message_blocks(message.get("content"))
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return " ".join(
        str(p.get("text", "")) for p in message_blocks(content) if p.get("type") == "text"
    )


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _offered_tools(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools")
    return {
        t["name"] for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)
    }


def requested_tool_calls(text: str, offered: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The (name, input) tool calls a user text asks for, limited to offered tools."""
    calls = []
    for match in TOOL_DIRECTIVE.finditer(text):
        name, raw_args = match.group(1), match.group(2)
        if name not in offered:
            continue
        try:
            args = json.loads(raw_args) if raw_args else {}
        except json.JSONDecodeError:
            args = {}
        calls.append((name, args if isinstance(args, dict) else {}))
    if calls:
        return calls
    if TIME_TRIGGER in text.lower() and "current_time" in offered:
        calls.append(("current_time", {}))
    calculation = CALCULATE_TRIGGER.search(text)
    if calculation and "calculator" in offered:
        expression = calculation.group(1).strip().rstrip("?!.").strip()
        calls.append(("calculator", {"expression": expression}))
    return calls


def _tool_use_reply(calls: list[tuple[str, dict[str, Any]]], seed: str) -> Reply:
    names = ", ".join(dict.fromkeys(name for name, _ in calls))
    content = [_text(f"I'll use {names}.")]
    for index, (name, args) in enumerate(calls):
        digest = hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:TOOL_ID_HEX_CHARS]
        content.append({"type": "tool_use", "id": f"toolu_{digest}", "name": name, "input": args})
    return Reply(content=content, stop_reason="tool_use")


def noted_text(text: str, seed: str, reply_tokens: int) -> str:
    """The plain acknowledgement, padded with deterministic filler to about ``reply_tokens``."""
    snippet = _collapse(text)[:NOTED_SNIPPET_CHARS]
    reply = f"Noted: {snippet}." if snippet else "Noted."
    digest = hashlib.sha256(seed.encode()).digest()
    index = 0
    while text_tokens(reply) < reply_tokens:
        reply += " " + FILLER_WORDS[digest[index % len(digest)] % len(FILLER_WORDS)]
        index += 1
    return reply


def default_reply(body: dict[str, Any], *, reply_tokens: int = DEFAULT_REPLY_TOKENS) -> Reply:
    """The emulator's built-in answer to a validated request (see the module docstring)."""
    seed = request_seed(body)
    last_user = last_user_message(body.get("messages", []))
    results = [
        _collapse(_tool_result_text(block))[:TOOL_RESULT_SNIPPET_CHARS]
        for block in message_blocks(last_user.get("content") if last_user else None)
        if block.get("type") == "tool_result"
    ]
    if results:
        return Reply([_text("Tool result: " + " | ".join(results))])
    text = user_text(last_user)
    if is_summary_request(text):
        return Reply([_text(structured_summary(body, int(body.get("max_tokens", reply_tokens))))])
    calls = requested_tool_calls(text, _offered_tools(body))
    if calls:
        return _tool_use_reply(calls, seed)
    return Reply([_text(noted_text(text, seed, reply_tokens))])


def _apply_stop_sequences(reply: Reply, stop_sequences: list[str]) -> Reply:
    for index, block in enumerate(reply.content):
        if block.get("type") != "text":
            continue
        text = str(block.get("text", ""))
        hits = [(text.find(stop), stop) for stop in stop_sequences if stop and stop in text]
        if hits:
            position, stop = min(hits)
            content = [*reply.content[:index], _text(text[:position])]
            return Reply(content=content, stop_reason="stop_sequence", stop_sequence=stop)
    return reply


def fit_reply(reply: Reply, *, max_tokens: int, stop_sequences: list[str] | None = None) -> Reply:
    """Cut a reply at its first stop sequence and to ``max_tokens`` output tokens."""
    reply = _apply_stop_sequences(reply, stop_sequences or [])
    budget = max_tokens
    kept: list[dict[str, Any]] = []
    for block in reply.content:
        cost = output_tokens([block])
        if cost <= budget:
            kept.append(block)
            budget -= cost
            continue
        if block.get("type") == "text" and budget > 0:
            kept.append(_text(str(block.get("text", ""))[: budget * CHARS_PER_TOKEN]))
        return Reply(content=kept, stop_reason="max_tokens")
    return Reply(content=kept, stop_reason=reply.stop_reason, stop_sequence=reply.stop_sequence)
