"""Watching a reply while the model writes it: text as it streams, tools as they start.

A host that shows replies live (the gateway's chat adapters, the terminal) hands a
:class:`ReplyObserver` to the turn it starts (``AgentLoop.run_turn(..., observer=...)``); the
loop reports each model call and each round of tool calls, and gives the provider the
observer's :meth:`~ReplyObserver.text_delta` for the answer's text as it streams. A turn run
without one (a benchmark, a summary call) costs nothing.

Observers are told, never asked: a failing observer must not fail the turn, so the loop wraps
it in a :class:`GuardedObserver`, which logs the first error and stops telling it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

log = logging.getLogger(__name__)


class ReplyObserver(Protocol):
    """What a live view of a turn is told (all calls are synchronous and must not block)."""

    def model_call_started(self) -> None:
        """A model call begins: the text of the previous call (if any) was not the answer."""

    def text_delta(self, text: str) -> None:
        """More text of the answer being written, in order."""

    def tools_started(self, names: Sequence[str]) -> None:
        """The model called these tools; they run now."""


class GuardedObserver:
    """An observer whose errors never reach the turn: the first is logged, then it is off."""

    def __init__(self, observer: ReplyObserver) -> None:
        self._observer: ReplyObserver | None = observer

    def _tell(self, method: str, *args: object) -> None:
        observer = self._observer
        if observer is None:
            return
        try:
            getattr(observer, method)(*args)
        except Exception:
            log.exception("reply observer failed in %s; the turn goes on", method)
            self._observer = None  # once is enough: the rest of this turn is not observed

    def model_call_started(self) -> None:
        """Tell the observer a model call begins."""
        self._tell("model_call_started")

    def text_delta(self, text: str) -> None:
        """Tell the observer about streamed answer text."""
        if text:
            self._tell("text_delta", text)

    def tools_started(self, names: Sequence[str]) -> None:
        """Tell the observer which tools run now."""
        self._tell("tools_started", list(names))
