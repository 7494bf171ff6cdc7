"""``dashboard.enabled``: the dashboard and ``/metrics`` served by the running daemon.

Uvicorn runs inside the daemon's event loop on sockets bound here (a port in use fails the
start), without signal handlers of its own (the daemon's stop it), started once the gateway
has started and stopped after it. The daemon's ``/metrics`` adds its own series (latencies,
levels, retries: :class:`~gateway.runtime.metrics.DaemonMetrics`) to the store's totals.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace

import uvicorn
from starlette.types import ASGIApp

from agent.tools.mcp.provider import McpToolProvider
from gateway.config.schema import Config, DashboardSettings, require_secret
from gateway.dashboard.app import ServiceState, create_app, create_metrics_app
from gateway.dashboard.auth import DashboardAuth
from gateway.dashboard.server import check_host, dashboard_context
from gateway.runtime.gateway import Gateway

log = logging.getLogger(__name__)


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves the process's signals to the daemon."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket (OSError when the port is taken)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


@asynccontextmanager
async def _serving(app: ASGIApp, sock: socket.socket) -> AsyncIterator[None]:
    # The daemon's log handlers and format (no uvicorn config of its own); no access log,
    # whose lines would carry the login link's token.
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="off"
    )
    server = _EmbeddedServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))

    def ended(task: asyncio.Task[None]) -> None:
        if not server.should_exit and not task.cancelled():  # not stopped by the daemon
            log.error("dashboard stopped serving: %r", task.exception())

    task.add_done_callback(ended)
    try:
        yield
    finally:
        server.should_exit = True
        await task
        sock.close()


def platform_states(gateway: Gateway) -> list[ServiceState]:
    """Each adapter: stopped for good (why), connected (as whom), or not connected yet."""
    states = []
    for name, adapter in gateway.adapters.items():
        if adapter.failure is not None:
            states.append(ServiceState(name, "stopped", adapter.failure))
        elif name in gateway.identities:
            states.append(ServiceState(name, "connected", f"as {gateway.identities[name]}"))
        else:
            states.append(ServiceState(name, "connecting"))
    return states


def mcp_states(providers: Sequence[McpToolProvider]) -> list[ServiceState]:
    """Each MCP server: its connection's state, its tools offered, its last error."""
    states = []
    for provider in providers:
        connection = provider.connection
        offered = f"{len(provider.tools())} tool(s)"
        error = f"; last error: {connection.last_error}" if connection.last_error else ""
        states.append(ServiceState(provider.name, connection.state, offered + error))
    return states


def dashboard_beside(
    config: Config,
) -> Callable[[Gateway], AbstractAsyncContextManager[object]]:
    """What ``hermes gateway run`` serves beside the gateway when ``dashboard.enabled``.

    Reads the token now, so a missing one stops the daemon before anything connects.
    """
    settings = config.dashboard
    auth = DashboardAuth(require_secret(settings.token_env, "dashboard.token_env"))
    return lambda gateway: _serve_beside(config, settings, auth, gateway)


@asynccontextmanager
async def _serve_beside(
    config: Config, settings: DashboardSettings, auth: DashboardAuth, gateway: Gateway
) -> AsyncIterator[None]:
    check_host(settings.host, allow_remote=settings.allow_remote)  # warns when remote
    context = replace(
        dashboard_context(config, gateway.app.repo, auth),
        daemon_metrics=gateway.metrics.registry,
        platform_states=lambda: platform_states(gateway),
        mcp_states=lambda: mcp_states(gateway.app.services.tool_providers),
    )
    async with contextlib.AsyncExitStack() as stack:
        sock = _bind(settings.host, settings.port)
        await stack.enter_async_context(_serving(create_app(context), sock))
        log.info(
            "dashboard: http://%s:%d/ (token from %s)", *sock.getsockname()[:2], settings.token_env
        )
        if settings.metrics_port is not None:
            metrics_sock = _bind(settings.host, settings.metrics_port)
            await stack.enter_async_context(_serving(create_metrics_app(context), metrics_sock))
            log.info("metrics: http://%s:%d/metrics", *metrics_sock.getsockname()[:2])
        yield
