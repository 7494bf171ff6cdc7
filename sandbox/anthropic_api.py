"""A local emulator of the Anthropic Messages API, faithful enough for the real `anthropic` SDK.

Serves ``POST /v1/messages`` (JSON, or SSE with ``"stream": true``) and
``POST /v1/messages/count_tokens`` with the API's validation errors, deterministic replies
(`anthropic_replies`), token counting (`anthropic_prompt`) and prompt-cache accounting
(`anthropic_cache`) on a `ManualClock`. Faults can be injected. A small control API under
``/_emulator/`` lets another process drive it; ``python -m sandbox.anthropic_api --port 9100``
runs it standalone until Ctrl-C.

Usage::

    emulator = AnthropicEmulator()
    base_url = await emulator.start()
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key="test", max_retries=0)
    ...
    await emulator.stop()
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from typing import Any

from aiohttp import web

from sandbox.anthropic_cache import CacheUsage, PromptCache, min_cacheable_tokens_for
from sandbox.anthropic_control import add_control_routes
from sandbox.anthropic_faults import (
    DEFAULT_RETRY_AFTER_SECONDS,
    ERROR_FAULTS,
    STREAM_ERROR,
    Fault,
    FaultPlan,
)
from sandbox.anthropic_http import error_response, has_credentials
from sandbox.anthropic_prompt import Prompt, build_prompt, count_prompt_tokens
from sandbox.anthropic_prompt import output_tokens as count_output_tokens
from sandbox.anthropic_records import EmulatorStats, RequestRecord, describe_request
from sandbox.anthropic_replies import (
    DEFAULT_REPLY_TOKENS,
    Reply,
    ReplyFn,
    default_reply,
    fit_reply,
    request_seed,
)
from sandbox.anthropic_sse import (
    encode_event,
    interrupted_events,
    message_events,
    truncated_events,
)
from sandbox.anthropic_validation import InvalidRequest, validate_request
from sandbox.clock import ManualClock

DEFAULT_CONTEXT_LENGTH = 200_000
DEFAULT_PORT = 9100
# Latency imitated when instant=False (the demo): time to first token, then per SSE event.
FIRST_TOKEN_DELAY_SECONDS = 0.3
MALFORMED_MESSAGE = {"type": "message", "content": "not a list of blocks", "usage": None}
"""What the "malformed" fault answers instead of a message."""
STREAM_EVENT_DELAY_SECONDS = 0.02
MESSAGE_ID_HEX_CHARS = 24
# The real API accepts Messages requests up to 32 MB; aiohttp's own default is only 1 MiB.
MAX_REQUEST_BYTES = 32 * 1024 * 1024
# How long stop() lets in-flight requests finish; an emulator need not drain slow faults.
SHUTDOWN_GRACE_SECONDS = 0.25


class AnthropicEmulator:
    """The emulated Messages API server and everything a test wants to see or steer in it.

    ``context_length`` (mutable) bounds the prompt; ``min_cacheable_tokens`` overrides the
    per-model minimum cacheable prefix (one number, or a dict by model id prefix);
    ``reply_tokens`` sizes the default reply; ``strict_alternation`` refuses two consecutive
    messages of one role; ``instant=False`` adds a demo-friendly latency. ``reply_fn``
    (also an attribute) replaces the built-in replies. ``record_bodies=False`` keeps request
    records without their raw bodies, so a long benchmark does not hold every prompt in memory.
    """

    def __init__(
        self,
        *,
        context_length: int = DEFAULT_CONTEXT_LENGTH,
        min_cacheable_tokens: int | dict[str, int] | None = None,
        clock: ManualClock | None = None,
        reply_tokens: int = DEFAULT_REPLY_TOKENS,
        strict_alternation: bool = True,
        instant: bool = True,
        reply_fn: ReplyFn | None = None,
        record_bodies: bool = True,
        api_key: str | None = None,
    ) -> None:
        self.api_key = api_key
        """When set, only this key is accepted (others get 401, as a revoked key does)."""
        self.context_length = context_length
        self.min_cacheable_tokens = min_cacheable_tokens
        self.clock = clock or ManualClock()
        self.reply_tokens = reply_tokens
        self.strict_alternation = strict_alternation
        self.instant = instant
        self.stream_delay = 0.0
        """Seconds between two SSE events of a stream (a slowly written reply); 0: as fast as
        ``instant`` says."""
        self.reply_fn = reply_fn
        self.record_bodies = record_bodies
        self.stats = EmulatorStats()
        self.requests: list[RequestRecord] = []
        self.cache = PromptCache(self.clock)
        self.base_url = ""
        self._faults = FaultPlan()
        self._runner: web.AppRunner | None = None
        self._served = 0

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start serving; return the base URL as the SDK takes it (``http://host:port``)."""
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_post("/v1/messages", self._handle_messages)
        app.router.add_post("/v1/messages/count_tokens", self._handle_count_tokens)
        add_control_routes(app, self)
        app.router.add_route("*", "/{tail:.*}", self._handle_unknown)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_GRACE_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        self.base_url = f"http://{bound_host}:{bound_port}"
        return self.base_url

    async def stop(self) -> None:
        """Stop serving and close open connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> AnthropicEmulator:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- steering and inspection -----------------------------------------------------------

    def inject_fault(
        self,
        kind: str,
        *,
        count: int = 1,
        model: str | None = None,
        contains: str | None = None,
        retry_after: float | None = None,
        delay: float = 0.0,
    ) -> None:
        """Make the next ``count`` matching Messages requests fail in the way ``kind`` names.

        Kinds: "429" (rate_limit_error with retry-after), "529" (overloaded_error), "500"
        (api_error), "slow" (wait ``delay`` seconds, then answer), "stream_error" (an SSE error
        event mid-stream; only streaming requests match), "disconnect" (close the connection
        without a response), "empty" (a complete answer without any content block),
        "truncated" (a stream that ends right after message_start; streams only), "cut" (the
        connection dropped right after message_start, mid-response; streams only), "malformed"
        (200 with an answer of the wrong shape: a provider bug or a changed API). ``model`` /
        ``contains`` restrict it to requests for that model / whose serialized messages and
        system contain that text. Raises ValueError on a bad kind.
        """
        fault = Fault(kind, count, model, contains, retry_after, delay)
        self._faults.add(fault)

    @property
    def pending_faults(self) -> list[Fault]:
        """Injected faults still waiting for a matching request."""
        return self._faults.pending

    def count_tokens(self, request_body: dict[str, Any]) -> int:
        """The prompt size of a request body, exactly as the server counts it."""
        return count_prompt_tokens(request_body)

    def min_cacheable_for(self, model: str) -> int:
        """The minimum cacheable prefix the emulator applies to ``model``."""
        return min_cacheable_tokens_for(model, self.min_cacheable_tokens)

    # -- the Messages API ------------------------------------------------------------------

    async def _handle_messages(self, request: web.Request) -> web.StreamResponse:
        body = await _read_json(request)
        if not has_credentials(request, self.api_key):
            described = body if isinstance(body, dict) else {}
            return self._refuse(described, 401, "authentication_error", "invalid x-api-key")
        if not isinstance(body, dict):
            return self._refuse(
                {}, 400, "invalid_request_error", "Request body must be a JSON object"
            )
        fault = self._faults.take(body, streaming=body.get("stream") is True)
        if fault is not None:
            early = await self._apply_fault(request, body, fault)
            if early is not None:
                return early
        try:
            validate_request(body, strict_alternation=self.strict_alternation)
        except InvalidRequest as refusal:
            return self._refuse(body, 400, "invalid_request_error", refusal.message)
        prompt = build_prompt(body)
        if prompt.total_tokens > self.context_length:
            too_long = (
                f"prompt is too long: {prompt.total_tokens} tokens > {self.context_length} maximum"
            )
            return self._refuse(body, 400, "invalid_request_error", too_long)
        usage = self.cache.account(prompt, self.min_cacheable_for(prompt.model))
        reply = await self._make_reply(body)
        if fault is not None and fault.kind == "empty":
            reply = Reply([], reply.stop_reason)
        message = self._response_message(body, reply, usage)
        interrupted = fault is not None and fault.kind == "stream_error"
        truncated = fault is not None and fault.kind in ("truncated", "cut")
        self._record(body, prompt, message, fault, completed=not (interrupted or truncated))
        if body.get("stream") is True:
            return await self._stream(request, message, fault.kind if fault else None)
        if not self.instant:
            await asyncio.sleep(FIRST_TOKEN_DELAY_SECONDS)
        return web.json_response(message, headers=self._headers())

    async def _apply_fault(
        self, request: web.Request, body: dict[str, Any], fault: Fault
    ) -> web.StreamResponse | None:
        """Answer with the fault, or return None when the request goes on (slow, stream_error)."""
        if fault.kind == "slow":
            await asyncio.sleep(fault.delay)
            return None
        if fault.kind in ("stream_error", "empty", "truncated", "cut"):
            return None
        if fault.kind == "malformed":
            return await self._malformed(request, body)
        if fault.kind == "disconnect":
            self._refuse(body, 0, "disconnect", "connection closed without a response", fault)
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=204)
        status, error_type, message = ERROR_FAULTS[fault.kind]
        headers = {}
        if fault.kind == "429":
            retry_after = (
                fault.retry_after if fault.retry_after is not None else DEFAULT_RETRY_AFTER_SECONDS
            )
            headers["retry-after"] = f"{retry_after:g}"
        return self._refuse(body, status, error_type, message, fault, headers)

    async def _malformed(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        """A 200 answer of the wrong shape (a broken proxy or a changed API): an SSE stream
        whose first event is not JSON, or a body that is no message."""
        if not body.get("stream"):
            return web.json_response(MALFORMED_MESSAGE, headers=self._headers())
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", **self._headers()}
        )
        await response.prepare(request)
        await response.write(b"event: message_start\ndata: {not json\n\n")
        await response.write_eof()
        return response

    async def _make_reply(self, body: dict[str, Any]) -> Reply:
        if self.reply_fn is None:
            produced: Any = default_reply(body, reply_tokens=self.reply_tokens)
        else:
            produced = self.reply_fn(body)
            if inspect.isawaitable(produced):
                produced = await produced
        reply = (
            Reply([{"type": "text", "text": produced}]) if isinstance(produced, str) else produced
        )
        return fit_reply(
            reply, max_tokens=body["max_tokens"], stop_sequences=body.get("stop_sequences")
        )

    def _response_message(
        self, body: dict[str, Any], reply: Reply, usage: CacheUsage
    ) -> dict[str, Any]:
        self._served += 1
        digest = hashlib.sha256(f"{self._served}:{request_seed(body)}".encode()).hexdigest()
        return {
            "id": f"msg_{digest[:MESSAGE_ID_HEX_CHARS]}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": reply.content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": reply.stop_sequence,
            "usage": usage.to_api(count_output_tokens(reply.content)),
        }

    async def _stream(
        self, request: web.Request, message: dict[str, Any], fault: str | None
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                **self._headers(),
            }
        )
        error_type, error_message = STREAM_ERROR
        if fault == "stream_error":
            events = interrupted_events(message, error_type, error_message)
        elif fault in ("truncated", "cut"):
            events = truncated_events(message)
        else:
            events = message_events(message)
        try:
            await response.prepare(request)
            if not self.instant:
                await asyncio.sleep(FIRST_TOKEN_DELAY_SECONDS)
            pause = self.stream_delay or (0.0 if self.instant else STREAM_EVENT_DELAY_SECONDS)
            for name, data in events:
                await response.write(encode_event(name, data))
                if pause:
                    await asyncio.sleep(pause)
            if fault == "cut" and request.transport is not None:
                request.transport.close()  # mid-response: the chunked body never ends
                return response
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away mid-stream (closed, or its process was killed)
        return response

    async def _handle_count_tokens(self, request: web.Request) -> web.Response:
        body = await _read_json(request)
        if not has_credentials(request, self.api_key):
            return error_response(401, "authentication_error", "invalid x-api-key")
        try:
            validate_request(
                body, strict_alternation=self.strict_alternation, require_max_tokens=False
            )
        except InvalidRequest as refusal:
            return error_response(400, "invalid_request_error", refusal.message, self._headers())
        self.stats.count_tokens_calls += 1
        return web.json_response({"input_tokens": self.count_tokens(body)}, headers=self._headers())

    async def _handle_unknown(self, request: web.Request) -> web.Response:
        return error_response(404, "not_found_error", f"Not Found: {request.method} {request.path}")

    # -- bookkeeping -----------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"request-id": f"req_emu_{len(self.requests):08d}"}

    def _refuse(
        self,
        body: dict[str, Any],
        status: int,
        error_type: str,
        message: str,
        fault: Fault | None = None,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        record = describe_request(body, status, None)
        record.error_type, record.error_message = error_type, message
        record.fault = fault.kind if fault is not None else None
        self._keep(record, completed=False)
        return error_response(status, error_type, message, {**self._headers(), **(headers or {})})

    def _record(
        self,
        body: dict[str, Any],
        prompt: Prompt,
        message: dict[str, Any],
        fault: Fault | None,
        *,
        completed: bool,
    ) -> None:
        record = describe_request(body, 200, prompt)
        record.fault = fault.kind if fault is not None else None
        record.usage = message["usage"]
        record.prompt_tokens = prompt.total_tokens
        record.stop_reason = message["stop_reason"]
        record.reply_text = "".join(
            b.get("text", "") for b in message["content"] if b.get("type") == "text"
        )
        if not completed:
            record.error_type = "truncated" if record.fault == "truncated" else STREAM_ERROR[0]
        self._keep(record, completed=completed)

    def _keep(self, record: RequestRecord, *, completed: bool) -> None:
        if not self.record_bodies:
            record.body = {}
        self.requests.append(record)
        self.stats.record(record.model, record.status, record.usage, completed=completed)


async def _read_json(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


if __name__ == "__main__":
    from sandbox.anthropic_cli import main

    main()
