"""OpenTelemetry spans of each turn, exported over OTLP/HTTP when ``tracing.otlp_endpoint`` is set.

The libraries are an optional extra (``pip install hermes-gateway[tracing]``) imported only
here and only when tracing is configured: without them, or without an endpoint, every span is
:data:`~agent.spans.NO_SPANS`'s no-op. The tracer provider is the daemon's own (not the
process-wide one), so nothing else in the process is traced by accident.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from agent.spans import NO_SPANS, Attributes, Span, Spans
from gateway.config.schema import TracingSettings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger(__name__)

SERVICE_NAME = "hermes-gateway"
INSTALL_HINT = "pip install 'hermes-gateway[tracing]'"


class _OtelSpan:
    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, attributes: Attributes) -> None:
        self._span.set_attributes(dict(attributes))


class Tracing:
    """Spans over one tracer provider; :meth:`aclose` exports what is left and stops."""

    def __init__(self, provider: TracerProvider | None) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(SERVICE_NAME) if provider is not None else None

    @property
    def spans(self) -> Spans:
        return self if self._tracer is not None else NO_SPANS

    @contextmanager
    def span(self, name: str, attributes: Attributes) -> Iterator[Span]:
        """A child of the span open around it (OpenTelemetry's context), ended on exit; an
        exception marks it failed (its type only: a message may hold user text)."""
        assert self._tracer is not None
        with self._tracer.start_as_current_span(
            name, attributes=dict(attributes), record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                yield _OtelSpan(span)
            except BaseException as exc:
                from opentelemetry.trace import Status, StatusCode

                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                raise

    async def aclose(self) -> None:
        """Export the spans still buffered and stop (off the event loop: the exporter blocks)."""
        if self._provider is not None:
            await asyncio.to_thread(self._provider.shutdown)


NO_TRACING = Tracing(None)


def tracing_to(exporter: SpanExporter, *, batch: bool = True) -> Tracing:
    """Spans handed to ``exporter`` (in batches, or each as it ends)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return Tracing(provider)


def open_tracing(settings: TracingSettings) -> Tracing:
    """Export over OTLP/HTTP to ``settings.otlp_endpoint``; no tracing when it is unset, or
    (with a warning) when the tracing extra is not installed."""
    if settings.otlp_endpoint is None:
        return NO_TRACING
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        log.warning("tracing.otlp_endpoint is set but OpenTelemetry is missing: %s", INSTALL_HINT)
        return NO_TRACING
    log.info("tracing: spans exported over OTLP/HTTP")
    return tracing_to(OTLPSpanExporter(endpoint=settings.otlp_endpoint))
