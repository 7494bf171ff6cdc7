"""OpenTelemetry spans of a turn through the real daemon path (Telegram emulator -> gateway ->
agent loop with a tool call -> Anthropic emulator): one trace per turn whose spans are the
receive, hygiene, model calls with the GenAI attributes, the tool call and the delivery;
exported over OTLP/HTTP when ``tracing.otlp_endpoint`` is set; nothing without it or without
the libraries."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent.spans import NO_SPANS
from gateway.config.schema import Config, TracingSettings, parse_config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.runtime.tracing import Tracing, open_tracing, tracing_to
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound

QUESTION = "calculate 6*7"
"""Makes the emulated model call the calculator tool, then answer."""


async def one_turn(config: Config, telegram: TelegramEmulator, tracing: Tracing | None) -> None:
    async with open_app(config, tracing=tracing) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            update = telegram.push_message(ALICE, QUESTION)
            await settled_inbound(gateway, "telegram", message_key(update))
        finally:
            await gateway.stop(grace_seconds=2.0)


def by_name(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


async def test_a_turn_is_one_trace_of_its_steps_with_the_genai_attributes(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(tmp_path, anthropic, telegram=telegram)
    exporter = InMemorySpanExporter()
    await one_turn(config, telegram, tracing_to(exporter, batch=False))
    spans = list(exporter.get_finished_spans())
    named = by_name(spans)
    model = config.model.name
    (turn,) = named["turn"]
    assert turn.parent is None
    assert {span.context.trace_id for span in spans} == {turn.context.trace_id}
    assert len(named["receive"]) == 1
    assert len(named["hygiene"]) == 2  # the policy's step and the window's
    assert len(named["delivery"]) == 1
    calls = named[f"chat {model}"]
    assert len(calls) == 2  # asks for the tool, then answers
    (tool,) = named["execute_tool calculator"]
    for span in [*named["receive"], *named["hygiene"], *calls, tool, *named["delivery"]]:
        assert span.parent is not None and span.parent.span_id == turn.context.span_id
    assert calls[0].end_time is not None and tool.start_time is not None
    assert calls[0].end_time <= tool.start_time
    for call in calls:
        attributes = call.attributes or {}
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.system"] == "anthropic"
        assert attributes["gen_ai.request.model"] == model
        assert isinstance(attributes["gen_ai.usage.input_tokens"], int)
        assert attributes["gen_ai.usage.input_tokens"] > 0
        assert isinstance(attributes["gen_ai.usage.output_tokens"], int)
        assert attributes["gen_ai.usage.output_tokens"] > 0
    assert (tool.attributes or {})["gen_ai.tool.name"] == "calculator"
    values = [str(v) for span in spans for v in (span.attributes or {}).values()]
    assert not any("6*7" in value for value in values)  # no user text, no tool arguments


async def otlp_receiver() -> tuple[web.AppRunner, str, list[ExportTraceServiceRequest]]:
    received: list[ExportTraceServiceRequest] = []

    async def traces(request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        received.append(ExportTraceServiceRequest.FromString(await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/v1/traces", received


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[ExportTraceServiceRequest]]]:
    runner, url, received = await otlp_receiver()
    try:
        yield url, received
    finally:
        await runner.cleanup()


async def test_the_configured_endpoint_receives_the_turns_spans_over_otlp(
    tmp_path: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    receiver: tuple[str, list[ExportTraceServiceRequest]],
) -> None:
    url, received = receiver
    base = gateway_config(tmp_path, anthropic, telegram=telegram)
    config = parse_config({**base.model_dump(mode="json"), "tracing": {"otlp_endpoint": url}})
    await one_turn(config, telegram, None)  # the app's tracing, from the configuration
    names = {
        span.name
        for request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    }
    assert {"turn", "receive", "delivery", f"chat {config.model.name}"} <= names
    assert "execute_tool calculator" in names


def test_no_endpoint_no_spans() -> None:
    assert open_tracing(TracingSettings()).spans is NO_SPANS


def test_an_endpoint_without_the_libraries_warns_and_traces_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # As if the tracing extra were not installed: importing the exporter fails.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with caplog.at_level(logging.WARNING):
        tracing = open_tracing(TracingSettings(otlp_endpoint="http://127.0.0.1:4318/v1/traces"))
    assert tracing.spans is NO_SPANS
    assert "hermes-gateway[tracing]" in caplog.text
