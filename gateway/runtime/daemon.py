"""``hermes gateway run`` as a process: logging, one daemon per ``$HERMES_HOME``, stop signals
and exit statuses around a :class:`~gateway.runtime.gateway.Gateway`."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from gateway.config.schema import Config, ConfigError, hermes_home
from gateway.platforms.registry import PLATFORMS
from gateway.runtime.app import configure_logging, open_app
from gateway.runtime.daemon_lock import DaemonLock, DaemonRunningError
from gateway.runtime.event_loop import first_of, running_loop_name, stop_signals
from gateway.runtime.gateway import Gateway

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_STARTUP_FAILED = 1
EXIT_NOTHING_ENABLED = 2
EXIT_NO_ADAPTER_LEFT = 3
"""Every adapter stopped for good (e.g. its token was revoked): nothing left to serve."""
EXIT_ALREADY_RUNNING = 4


Beside = Callable[[Gateway], AbstractAsyncContextManager[object]]
"""Something served beside the started gateway, stopped after it (the dashboard: it sits
above this layer, so the command line hands it in)."""


async def run_gateway(config: Config, also_serve: Sequence[Beside] = ()) -> int:
    """``hermes gateway run``: serve until SIGINT/SIGTERM; returns the exit code.

    Each of ``also_serve`` is entered once the gateway has started and left after it stopped
    (an OSError entering one, a port in use, is a failed start)."""
    configure_logging(config)
    try:
        lock = DaemonLock.acquire(hermes_home())  # held until this function returns
    except DaemonRunningError as exc:
        log.error("%s; not starting a second one", exc)
        return EXIT_ALREADY_RUNNING
    log.info("event loop: %s (pid %d)", running_loop_name(), os.getpid())
    if not PLATFORMS.enabled(config):
        names = " or ".join(f"platforms.{name}.enabled" for name in PLATFORMS.names())
        log.error("no platform is enabled: set %s", names)
        return EXIT_NOTHING_ENABLED
    async with open_app(config, with_tools=True) as app:
        app.services.provider.warm_up()  # the SDK import overlaps connecting the platforms
        gateway = Gateway(app)
        # Before start: a SIGTERM while resuming must stop the daemon cleanly, not kill it.
        with stop_signals() as stop:
            try:
                await gateway.start()
            except ConfigError:
                raise
            except Exception as exc:
                log.error("gateway failed to start: %s", exc)
                await gateway.stop(grace_seconds=0)
                return EXIT_STARTUP_FAILED
            async with contextlib.AsyncExitStack() as beside:
                try:
                    for serve in also_serve:
                        await beside.enter_async_context(serve(gateway))
                except OSError as exc:  # a port taken, say
                    log.error("gateway failed to start: %s", exc)
                    await gateway.stop(grace_seconds=0)
                    return EXIT_STARTUP_FAILED
                try:
                    await first_of(stop, gateway.no_adapter_left)
                finally:
                    log.info("shutting down: letting running turns finish")
                    await gateway.stop()
    if gateway.no_adapter_left.is_set():
        log.error("gateway stopped: no platform adapter is left (see the errors above)")
        return EXIT_NO_ADAPTER_LEFT
    log.info("gateway stopped")
    lock.release()
    return EXIT_OK
