"""``hermes gateway run`` as a process: logging, one daemon per ``$HERMES_HOME``, stop signals
and exit statuses around a :class:`~gateway.runtime.gateway.Gateway`; with failover, the
election around it (a standby runs no gateway, a leader one per term)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from gateway.config.schema import Config, ConfigError, database_url, hermes_home
from gateway.messages.failures import failure_summary
from gateway.platforms.registry import PLATFORMS
from gateway.platforms.telegram.settings import TelegramSettings
from gateway.runtime.app import configure_logging, open_app
from gateway.runtime.daemon_lock import DaemonLock, DaemonRunningError
from gateway.runtime.election import Election
from gateway.runtime.event_loop import first_of, running_loop_name, stop_signals
from gateway.runtime.gateway import Gateway
from gateway.runtime.webhook_inbox import StandbyWebhook, standby_webhook_settings
from gateway.store.db import upgrade_database

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_STARTUP_FAILED = 1
EXIT_NOTHING_ENABLED = 2
EXIT_NO_ADAPTER_LEFT = 3
"""Every adapter stopped for good (e.g. its token was revoked): nothing left to serve."""
EXIT_ALREADY_RUNNING = 4


PROVIDER_SDK_MODULES = {
    "anthropic": "agent.providers.anthropic.sdk",
    "openrouter": "agent.providers.openai.sdk",
    "openai_compat": "agent.providers.openai.sdk",
}
"""The SDK each provider imports on first use (seconds of CPU: a standby imports it early)."""

Beside = Callable[[Gateway], AbstractAsyncContextManager[object]]
"""Something served beside the started gateway, stopped after it (the dashboard: it sits
above this layer, so the command line hands it in)."""


async def run_gateway(config: Config, also_serve: Sequence[Beside] = ()) -> int:
    """``hermes gateway run``: serve until SIGINT/SIGTERM; returns the exit code.

    Each of ``also_serve`` is entered once the gateway has started and left after it stopped
    (an OSError entering one, a port in use, is a failed start). With ``gateway.failover``
    on, the gateway serves only while it leads the election (:func:`run_with_failover`)."""
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
    if config.gateway.failover.enabled:
        code = await run_with_failover(config, also_serve)
    else:
        served = await _serve_term(config, also_serve, None)
        code = EXIT_OK if served is None else served  # None only ends a failover term
    if code == EXIT_NO_ADAPTER_LEFT:
        log.error("gateway stopped: no platform adapter is left (see the errors above)")
    elif code == EXIT_OK:
        log.info("gateway stopped")
        lock.release()
    return code


async def run_with_failover(config: Config, also_serve: Sequence[Beside] = ()) -> int:
    """Stand by until this gateway wins the election, serve while it leads, stand by again
    when it loses the lease; until SIGINT/SIGTERM. The schema is brought up to date first
    (under the database's migration lock: hosts started together migrate once)."""
    url = database_url(config)
    lease_seconds = config.gateway.failover.lease_seconds
    with stop_signals() as stop:
        webhook = standby_webhook_settings(config)  # a missing shared secret fails first
        await upgrade_database(url)
        _ready_to_lead(config)
        async with Election(url, lease_seconds) as election:
            log.info("failover: standing by as %s (lease %g s)", election.me.holder, lease_seconds)
            while True:
                async with _standing_by(webhook, election):
                    elected = await _until_elected(election, stop)
                if not elected:
                    return EXIT_OK
                epoch = election.epoch
                code = await _serve_term(config, also_serve, election, stop)
                if epoch is not None and election.epoch is None:
                    await election.resign(epoch)  # lost here first: free it for a standby now
                if code is not None:
                    return code
                log.warning("failover: standing by again as %s", election.me.holder)


def _ready_to_lead(config: Config) -> None:
    """Import the model SDK now, before joining the election: imported at the start of a term
    (on a thread, as a lone daemon does) it holds the interpreter for seconds on a busy host,
    long enough for a short lease to lapse before its first renewal."""
    module = PROVIDER_SDK_MODULES.get(config.model.provider)
    if module is not None:
        importlib.import_module(module)


def _standing_by(
    webhook: TelegramSettings | None, election: Election
) -> contextlib.AbstractAsyncContextManager[object]:
    """What a standby serves: Telegram's webhook endpoint (keeping updates for the leader),
    when Telegram runs in webhook mode; nothing otherwise."""
    if webhook is None:
        return contextlib.nullcontext()
    return StandbyWebhook(webhook, election)


async def _until_elected(election: Election, stop: asyncio.Event) -> bool:
    """Wait for this gateway to lead (True) or for a stop signal (False)."""
    campaign = asyncio.create_task(election.campaign())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({campaign, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not campaign.done():
        campaign.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await campaign
    return not stop.is_set()


async def _serve_term(
    config: Config,
    also_serve: Sequence[Beside],
    election: Election | None,
    stop: asyncio.Event | None = None,
) -> int | None:
    """Run one gateway until a stop signal, no adapter left or (failover) the lease lost.

    Returns the exit code, or None when the term ended by losing the lease (whatever failed
    on the way out then is only logged: the database refused it)."""
    fence = election.fence() if election is not None else None
    try:
        async with open_app(config, with_tools=True, fence=fence) as app:
            app.services.provider.warm_up()  # the SDK import overlaps connecting the platforms
            gateway = Gateway(app, election=election)
            # Before start: a SIGTERM while resuming must stop the daemon cleanly, not kill it.
            with contextlib.ExitStack() as signals:
                stopping = stop if stop is not None else signals.enter_context(stop_signals())
                return await _serve(gateway, also_serve, stopping, election)
    except Exception as exc:
        if election is None or not election.lost.is_set() or isinstance(exc, ConfigError):
            raise
        log.warning("failover: the term ended with %s", failure_summary(exc))
        return None


async def _serve(
    gateway: Gateway,
    also_serve: Sequence[Beside],
    stop: asyncio.Event,
    election: Election | None,
) -> int | None:
    """Start ``gateway``, serve until an end, stop it; the exit code (None: lease lost)."""
    lost = [election.lost] if election is not None else []
    try:
        await gateway.start()
    except ConfigError:
        raise
    except Exception as exc:
        if election is not None and election.lost.is_set():
            log.warning("failover: start abandoned: %s", failure_summary(exc))
            await gateway.stop(grace_seconds=0)
            return None
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
            await first_of(stop, gateway.no_adapter_left, *lost)
        finally:
            if election is not None and election.lost.is_set():
                log.warning("failover: stopping turns, jobs, deliveries and platforms at once")
                await gateway.stop(grace_seconds=0)
            else:
                log.info("shutting down: letting running turns finish")
                await gateway.stop()
    if election is not None and election.lost.is_set() and not stop.is_set():
        return None
    if gateway.no_adapter_left.is_set():
        return EXIT_NO_ADAPTER_LEFT
    return EXIT_OK
