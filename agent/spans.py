"""Where the agent marks the steps of a turn for tracing: model calls, tool calls, compactions.

The host hands a :class:`Spans` in (the gateway's OpenTelemetry one when tracing is set up);
the agent itself depends on no tracing library. The default, :data:`NO_SPANS`, does nothing.
Attribute names follow OpenTelemetry's GenAI semantic conventions where there is one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

AttributeValue = str | int | float | bool
Attributes = Mapping[str, AttributeValue]


class Span(Protocol):
    """A step being traced: attributes learnt while it runs are added to it."""

    def set(self, attributes: Attributes) -> None: ...


class Spans(Protocol):
    """Opens a span as a child of the one open around it."""

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[Span]: ...


class _NoSpan:
    def set(self, attributes: Attributes) -> None:
        pass


class _NoSpans:
    @contextmanager
    def span(self, name: str, attributes: Attributes) -> Iterator[Span]:
        yield _NoSpan()


NO_SPANS: Spans = _NoSpans()
"""Tracing off: every span is a no-op."""
