"""A test that hangs says where, and fails: after ``HERMES_TEST_HANG_SECONDS`` (default 300)
a test still in its call phase prints the stack of every asyncio task and every thread (to its
captured stderr, shown with its failure, and at once to the terminal in a run without workers),
then its own task is cancelled: an asyncio test fails with the place it waited instead of
holding the run until CI's limit (a plain test gets the report only).

A hang in an asyncio test shows only ``select()`` in the main thread; what waits, and on what,
is in the tasks. The report is read from a timer thread (the event loop is stuck in a wait, so
reading its task set is safe enough for a diagnosis); the cancel is handed to the loop.
"""

from __future__ import annotations

import asyncio
import gc
import io
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

DEFAULT_HANG_SECONDS = 300.0

Uncaptured = Callable[[], AbstractContextManager[object]]


def hang_seconds() -> float:
    """The configured threshold (``HERMES_TEST_HANG_SECONDS``); 0 turns the report off."""
    return float(os.environ.get("HERMES_TEST_HANG_SECONDS", DEFAULT_HANG_SECONDS))


def _running_loops() -> list[asyncio.AbstractEventLoop]:
    return [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, asyncio.AbstractEventLoop) and obj.is_running()
    ]


def _tasks(loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[object]]:
    for _ in range(3):  # the set may change while it is read from this thread: read it again
        try:
            return list(asyncio.all_tasks(loop))
        except RuntimeError:
            continue
    return []


def task_stacks() -> str:
    """Every task of every running event loop, with the stack it waits in."""
    buffer = io.StringIO()
    for loop in _running_loops():
        for task in _tasks(loop):
            buffer.write(f"--- {task.get_name()}\n")
            task.print_stack(file=buffer)
    return buffer.getvalue()


def thread_stacks() -> str:
    """Every thread's stack, innermost call last."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "".join(
        f"--- thread {names.get(ident, ident)}\n" + "".join(traceback.format_stack(frame))
        for ident, frame in sys._current_frames().items()
    )


def _report(nodeid: str, test_name: str, seconds: float, uncaptured: Uncaptured) -> None:
    text = (
        f"\n=== {nodeid} still running after {seconds:g} s: its tasks and threads ===\n"
        f"{task_stacks()}{thread_stacks()}"
    )
    sys.stderr.write(text)  # captured: shown with the failure (also from an xdist worker)
    terminal = sys.__stderr__
    if terminal is not None:  # and at once on the terminal, in a run without workers
        with uncaptured():
            terminal.write(text)
            terminal.flush()
    for loop in _running_loops():
        for task in _tasks(loop):
            if getattr(task.get_coro(), "__name__", None) == test_name:
                loop.call_soon_threadsafe(task.cancel)


@contextmanager
def reporting_hangs(
    nodeid: str, test_name: str, uncaptured: Uncaptured = nullcontext
) -> Iterator[None]:
    """Report ``nodeid``'s tasks if it is still running after :func:`hang_seconds` and cancel
    the task running the coroutine ``test_name``; ``uncaptured`` lifts the test runner's output
    capture while the report is written."""
    seconds = hang_seconds()
    if seconds <= 0:
        yield
        return
    timer = threading.Timer(seconds, _report, args=(nodeid, test_name, seconds, uncaptured))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
