"""The event loop the commands run on: uvloop where it is installed, else asyncio's own.

The gateway spends most of its CPU in the event loop and the HTTP clients' socket handling;
uvloop (libuv) does that part several times faster, which measured as about a fifth less CPU
per message in ``bench/gateway_load.py``. Everything else is plain asyncio and runs the same
on either loop; ``gateway.event_loop: asyncio`` opts out.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import signal
from collections.abc import Coroutine, Iterator
from typing import Any, Literal, TypeVar

from gateway.config.schema import ConfigError

T = TypeVar("T")

EventLoopChoice = Literal["auto", "uvloop", "asyncio"]


def run(main: Coroutine[Any, Any, T], choice: EventLoopChoice = "auto") -> T:
    """Run ``main`` to completion on the chosen loop and return its result.

    Raises ConfigError when ``choice`` is "uvloop" and uvloop is not installed.
    """
    if choice != "asyncio":
        try:
            uvloop = importlib.import_module("uvloop")
        except ImportError:
            if choice == "uvloop":
                main.close()  # never started; closing it avoids a "never awaited" warning
                raise ConfigError(
                    "gateway.event_loop: uvloop is not installed (pip install uvloop, "
                    "or set event_loop: auto)"
                ) from None
        else:
            result: T = uvloop.run(main)
            return result
    return asyncio.run(main)


def running_loop_name() -> str:
    """ "uvloop" or "asyncio": the loop the caller runs on (for the start-up log line)."""
    loop_type = type(asyncio.get_running_loop())
    return "uvloop" if loop_type.__module__.startswith("uvloop") else "asyncio"


@contextlib.contextmanager
def stop_signals() -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM while the block runs (on the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signums = (signal.SIGINT, signal.SIGTERM)
    for signum in signums:
        loop.add_signal_handler(signum, stop.set)
    try:
        yield stop
    finally:
        for signum in signums:
            with contextlib.suppress(ValueError):
                loop.remove_signal_handler(signum)


async def first_of(*events: asyncio.Event) -> None:
    """Wait until any of the events is set."""
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
