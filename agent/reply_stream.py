"""Watching a reply while the model writes it: text as it streams, tools as they start.

A host that shows replies live (the gateway's chat adapters, the terminal) sets a
:class:`ReplyObserver` for the duration of one turn with :func:`observing`; the providers
report every text delta of the answer and the loop reports each round of tool calls. The agent
knows nothing of who watches: the observer lives in a context variable, so no provider or loop
signature carries it, and a turn run without one (a benchmark, a summary call) costs nothing.

Observers are told, never asked: a failing observer must not fail the turn, so every call is
guarded here and its error logged once per turn.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Sequence
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


_observer: contextvars.ContextVar[ReplyObserver | None] = contextvars.ContextVar(
    "reply_observer", default=None
)


@contextlib.contextmanager
def observing(observer: ReplyObserver | None) -> Iterator[None]:
    """Report the turn run in this block (this task and the tasks it starts) to ``observer``."""
    token = _observer.set(observer)
    try:
        yield
    finally:
        _observer.reset(token)


def _notify(method: str, *args: object) -> None:
    observer = _observer.get()
    if observer is None:
        return
    try:
        getattr(observer, method)(*args)
    except Exception:
        log.exception("reply observer failed in %s; the turn goes on", method)
        _observer.set(None)  # once is enough: the rest of this turn is not observed


def model_call_started() -> None:
    """Tell the turn's observer (if any) that a model call begins."""
    _notify("model_call_started")


def text_delta(text: str) -> None:
    """Tell the turn's observer (if any) about streamed answer text."""
    if text:
        _notify("text_delta", text)


def tools_started(names: Sequence[str]) -> None:
    """Tell the turn's observer (if any) which tools run now."""
    _notify("tools_started", list(names))
