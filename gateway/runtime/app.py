"""Opening and closing the pieces a command needs: store, repository, services, sessions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from gateway.config.schema import Config, database_url
from gateway.config.secrets import install_log_sanitizer
from gateway.jobs.clock import JobClock
from gateway.runtime.log_setup import QUIET_LIBRARIES, configure_logging
from gateway.runtime.tracing import Tracing, open_tracing
from gateway.sessions.manager import SessionManager
from gateway.sessions.mcp_servers import McpServers
from gateway.sessions.services import AgentServices, build_services
from gateway.sessions.session_memory import BYTES_PER_MB
from gateway.store.db import Store, open_store
from gateway.store.repository import Repository
from gateway.store.writer import WriteFence

__all__ = ["QUIET_LIBRARIES", "App", "configure_logging", "database_url", "open_app"]


@dataclass(slots=True)
class App:
    """Everything a running command shares."""

    config: Config
    store: Store
    repo: Repository
    services: AgentServices
    sessions: SessionManager


@asynccontextmanager
async def open_app(
    config: Config,
    *,
    with_tools: bool = False,
    tracing: Tracing | None = None,
    job_clock: JobClock | None = None,
    fence: WriteFence | None = None,
) -> AsyncIterator[App]:
    """Open the store (applying migrations), build services and a session manager.

    ``with_tools`` (the daemon and ``hermes chat``) starts the MCP servers too, in parallel
    with opening the store. Secrets are masked in the log from here on, also when the caller
    configured logging itself. Turns are traced to ``tracing``, else as ``tracing`` in the
    configuration says (closed, its last spans exported, when the app closes). ``job_clock``:
    the scheduled jobs' clock (tests move it). ``fence``: a failover leader's write fence.
    """
    install_log_sanitizer(config)
    servers = McpServers()
    if with_tools and config.mcp.servers:
        starting = asyncio.create_task(McpServers.start(config.mcp))
    else:
        starting = None
    try:
        store = await open_store(database_url(config), fence=fence)
        try:
            if starting is not None:
                servers = await starting
            repo = Repository(store)
            await servers.keep_tool_lists(repo)
            traced = tracing or open_tracing(config.tracing)
            services = build_services(
                config, repo, servers.providers, traced.spans, job_clock=job_clock
            )
            sessions = SessionManager(
                services, max_loaded_bytes=int(config.gateway.loaded_sessions_max_mb * BYTES_PER_MB)
            )
            try:
                yield App(config, store, repo, services, sessions)
            finally:
                await sessions.close()
                await services.aclose()
                await traced.aclose()
        finally:
            await store.close()
    finally:
        if starting is not None and not starting.done():
            starting.cancel()
        await servers.aclose()
