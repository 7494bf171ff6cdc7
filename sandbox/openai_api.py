"""A local OpenAI chat-completions emulator (the shape OpenRouter and local servers speak).

``OpenAIEmulator`` serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 with
deterministic replies, so the real ``openai`` SDK can be driven end to end without a network:

* replies: after a tool result, ``"Tool result: <first 100 chars>"``; when tools are offered and
  the last user text holds ``[[tool:NAME {json}]]`` for an offered tool, a tool call; otherwise
  ``"Echo: <first 80 chars of the last user text>"``;
* usage: ``prompt_tokens`` (about four characters per token of the canonical request), with
  ``prompt_tokens_details.cached_tokens`` and ``cache_write_tokens``;
* prompt caching, OpenRouter-to-Claude style: a content part with ``cache_control`` makes the
  prefix up to the end of its message a cache entry (when at least ``min_cacheable_tokens``
  long); a later request whose message prefix matches an entry reads it. With
  ``automatic_caching=True`` every message boundary is an entry, as on OpenAI itself;
* a context window: ``prompt_tokens + max_tokens`` above ``context_length`` is the 400
  ``context_length_exceeded`` error OpenAI returns;
* ``inject_fault(status, count)``: the next ``count`` requests fail with that status.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CHARS_PER_TOKEN = 4
DEFAULT_CONTEXT_LENGTH = 128_000
DEFAULT_MIN_CACHEABLE_TOKENS = 1_024
ECHO_SNIPPET_CHARS = 80
TOOL_RESULT_SNIPPET_CHARS = 100
TOOL_DIRECTIVE = re.compile(r"\[\[tool:([A-Za-z0-9_-]+)\s*(\{.*?\})?\s*\]\]", re.DOTALL)
ROLES = ("system", "developer", "user", "assistant", "tool")
FAULT_MESSAGES = {
    429: ("rate_limit_exceeded", "Rate limit reached for requests"),
    500: ("server_error", "The server had an error while processing your request."),
    502: ("server_error", "Bad gateway."),
    503: ("server_error", "The engine is currently overloaded, please try again later."),
    529: ("server_error", "Overloaded"),
}


def count_tokens(value: Any) -> int:
    """The emulator's token count of a JSON value: canonical JSON length over four."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return max(1, len(text) // CHARS_PER_TOKEN)


def _without_markers(value: Any) -> Any:
    """The value with every ``cache_control`` key removed (markers move; content does not)."""
    if isinstance(value, dict):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


def _has_part_marker(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and "cache_control" in p for p in content
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


@dataclass
class EmulatorStats:
    """Totals over every answered request."""

    requests: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class _Boundary:
    """The prompt up to the end of one message: its hash and its size in tokens."""

    digest: str
    tokens: int
    marked: bool


@dataclass
class _Fault:
    status: int
    remaining: int
    in_body: bool = False


@dataclass
class _Usage:
    prompt: int
    cached: int
    written: int
    completion: int = 0

    def to_api(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
            "prompt_tokens_details": {
                "cached_tokens": self.cached,
                "cache_write_tokens": self.written,
            },
        }


@dataclass
class _PrefixCache:
    """Message-prefix cache entries: digest -> size in tokens."""

    min_tokens: int
    automatic: bool
    entries: dict[str, int] = field(default_factory=dict)

    def account(self, boundaries: list[_Boundary], prompt_tokens: int) -> _Usage:
        hits = [b.tokens for b in boundaries if b.digest in self.entries]
        cached = max(hits, default=0)
        candidates = [
            b for b in boundaries if (b.marked or self.automatic) and b.tokens >= self.min_tokens
        ]
        written = 0
        if candidates and not self.automatic:
            written = max(candidates[-1].tokens - cached, 0)
        for boundary in candidates:
            self.entries[boundary.digest] = boundary.tokens
        return _Usage(prompt=prompt_tokens, cached=cached, written=written)


class OpenAIEmulator:
    """The chat-completions emulator; ``await start()`` returns the base URL (ending in /v1)."""

    def __init__(
        self,
        *,
        context_length: int = DEFAULT_CONTEXT_LENGTH,
        min_cacheable_tokens: int = DEFAULT_MIN_CACHEABLE_TOKENS,
        automatic_caching: bool = False,
    ) -> None:
        self.context_length = context_length
        self.stats = EmulatorStats()
        self.requests: list[dict[str, Any]] = []
        self.last_usage: dict[str, Any] | None = None
        self._cache = _PrefixCache(min_cacheable_tokens, automatic_caching)
        self._faults: list[_Fault] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> str:
        """Listen on 127.0.0.1 (a free port) and return the base URL as the SDK takes it."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        """Stop listening and close open connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def inject_fault(self, status: int, count: int = 1, *, in_body: bool = False) -> None:
        """Make the next ``count`` requests fail with HTTP ``status`` and an OpenAI error body.

        ``in_body=True`` answers HTTP 200 with ``{"error": {..., "code": status}}`` and no
        choices instead, as OpenRouter does for some upstream failures.
        """
        if count < 1 or status < 400:
            raise ValueError(f"a fault needs a status >= 400 and count >= 1, got {status}, {count}")
        self._faults.append(_Fault(status, count, in_body))

    # ------------------------------------------------------------------ handlers

    @staticmethod
    def _error(status: int, message: str, error_type: str, code: str | None) -> web.Response:
        body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
        return web.json_response(body, status=status, headers={"retry-after": "0"})

    def _take_fault(self) -> web.Response | None:
        if not self._faults:
            return None
        fault = self._faults[0]
        fault.remaining -= 1
        if fault.remaining == 0:
            self._faults.pop(0)
        code, message = FAULT_MESSAGES.get(fault.status, ("error", "Injected failure"))
        if fault.in_body:
            return web.json_response({"error": {"message": message, "code": fault.status}})
        kind = "requests" if fault.status == 429 else "server_error"
        return self._error(fault.status, message, kind, code)

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": "emulated", "object": "model"}]}
        )

    async def _chat_completions(self, request: web.Request) -> web.Response:
        if not request.headers.get("Authorization", "").startswith("Bearer "):
            return self._error(401, "Missing API key.", "invalid_request_error", "invalid_api_key")
        try:
            body = await request.json()
        except ValueError:
            return self._error(400, "Invalid JSON body.", "invalid_request_error", None)
        self.requests.append(body)
        fault = self._take_fault()
        response = fault or self._validate(body) or self._answer(body)
        if fault is not None or response.status >= 400:
            self.stats.errors += 1
        return response

    def _validate(self, body: dict[str, Any]) -> web.Response | None:
        """An OpenAI-style 400 for a request the real API would refuse, else None."""
        invalid = "invalid_request_error"
        messages = body.get("messages")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return self._error(400, "you must provide a model parameter", invalid, None)
        if not isinstance(messages, list) or not messages:
            return self._error(400, "'messages' must be a non-empty array", invalid, None)
        if body.get("stream"):
            return self._error(400, "streaming is not emulated", invalid, None)
        open_calls: set[str] = set()
        for index, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ROLES:
                return self._error(400, f"messages[{index}].role is invalid", invalid, None)
            if role == "tool" and message.get("tool_call_id") not in open_calls:
                text = (
                    f"messages[{index}]: messages with role 'tool' must be a response to a "
                    "preceding message with 'tool_calls'."
                )
                return self._error(400, text, invalid, None)
            if role == "assistant":
                open_calls = {c.get("id") for c in message.get("tool_calls") or []}
            elif role != "tool":
                open_calls = set()
        return None

    def _boundaries(self, body: dict[str, Any]) -> list[_Boundary]:
        """Every message boundary of the request; tools come first in the cached prefix."""
        digest = hashlib.sha256()
        digest.update(json.dumps(_without_markers(body.get("tools")), sort_keys=True).encode())
        digest.update(str(body["model"]).encode())
        tokens = count_tokens(body.get("tools") or [])
        boundaries = []
        for message in body["messages"]:
            bare = _without_markers(message)
            digest.update(json.dumps(bare, sort_keys=True, ensure_ascii=False).encode())
            tokens += count_tokens(bare)
            boundaries.append(_Boundary(digest.hexdigest(), tokens, _has_part_marker(message)))
        return boundaries

    def _answer(self, body: dict[str, Any]) -> web.Response:
        boundaries = self._boundaries(body)
        prompt_tokens = boundaries[-1].tokens
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        if prompt_tokens + max_tokens > self.context_length:
            text = (
                f"This model's maximum context length is {self.context_length} tokens. However, "
                f"you requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the "
                f"messages, {max_tokens} in the completion). Please reduce the length of the "
                "messages or completion."
            )
            return self._error(400, text, "invalid_request_error", "context_length_exceeded")
        usage = self._cache.account(boundaries, prompt_tokens)
        message, finish_reason = reply_for(body)
        usage.completion = count_tokens(message)
        if max_tokens and usage.completion > max_tokens:
            usage.completion, finish_reason = max_tokens, "length"
        self._record(usage)
        completion = {
            "id": "chatcmpl-"
            + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24],
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": usage.to_api(),
        }
        return web.json_response(completion)

    def _record(self, usage: _Usage) -> None:
        self.stats.requests += 1
        self.stats.prompt_tokens += usage.prompt
        self.stats.cached_tokens += usage.cached
        self.stats.cache_write_tokens += usage.written
        self.stats.completion_tokens += usage.completion
        self.last_usage = usage.to_api()


def _offered_tools(body: dict[str, Any]) -> set[str]:
    return {
        str((tool.get("function") or {}).get("name"))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
    }


def reply_for(body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The deterministic assistant message for a request, and its finish reason."""
    last = body["messages"][-1]
    if last.get("role") == "tool":
        snippet = _text_of(last.get("content"))[:TOOL_RESULT_SNIPPET_CHARS]
        return {"role": "assistant", "content": f"Tool result: {snippet}"}, "stop"
    user_text = next(
        (_text_of(m.get("content")) for m in reversed(body["messages"]) if m.get("role") == "user"),
        "",
    )
    offered = _offered_tools(body)
    calls: list[dict[str, Any]] = []
    for name, arguments in TOOL_DIRECTIVE.findall(user_text):
        if name in offered:
            seed = hashlib.sha256(f"{len(calls)}:{name}:{arguments}:{user_text}".encode())
            calls.append(
                {
                    "id": "call_" + seed.hexdigest()[:24],
                    "type": "function",
                    "function": {"name": name, "arguments": arguments or "{}"},
                }
            )
    if calls:
        return {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
    snippet = " ".join(user_text.split())[:ECHO_SNIPPET_CHARS]
    return {"role": "assistant", "content": f"Echo: {snippet}"}, "stop"
