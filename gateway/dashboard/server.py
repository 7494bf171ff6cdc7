"""``hermes dashboard``: open the store, print the login link, serve the pages with uvicorn."""

from __future__ import annotations

import logging
import socket
import sys

import uvicorn

from gateway.config.prices import chat_model_info
from gateway.config.schema import Config, database_url, hermes_home, is_loopback, mask_url
from gateway.config.secrets import install_log_sanitizer
from gateway.dashboard.app import DashboardContext, create_app
from gateway.dashboard.auth import TOKEN_ENV, DashboardAuth
from gateway.platforms.registry import PLATFORMS
from gateway.runtime.daemon_lock import running_daemon
from gateway.store.db import open_store
from gateway.store.repository import Repository

log = logging.getLogger(__name__)


class DashboardBindError(ValueError):
    """The host is not loopback and binding elsewhere was not asked for explicitly."""


def check_host(host: str, *, allow_remote: bool) -> None:
    """Refuse a non-loopback ``host`` unless ``allow_remote``; warn when it is allowed."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise DashboardBindError(
            f"{host} is not a loopback address; the dashboard shows your users' messages and "
            "spend: pass --allow-remote to bind there anyway"
        )
    log.warning(
        "dashboard bound to %s (%s): anyone who can reach it and holds the token sees it",
        host,
        socket.getfqdn(),
    )


def login_link(host: str, port: int, token: str) -> str:
    """The URL that opens a browser session."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/login?token={token}"


def dashboard_context(config: Config, repo: Repository, auth: DashboardAuth) -> DashboardContext:
    """What the pages need, from the configuration: limits, the pricing model, platforms, the
    secrets to mask (the configured ones and the dashboard's token), the daemon's lock."""
    sanitizer = install_log_sanitizer(config)
    sanitizer.add_secrets([auth.token])
    return DashboardContext(
        repo=repo,
        limits=config.limits,
        main=chat_model_info(config, config.model.name),
        platforms=tuple(PLATFORMS.sections(config)),
        auth=auth,
        daemon_pid=lambda: running_daemon(hermes_home()),
        redact=sanitizer.redact,
    )


async def serve_dashboard(config: Config, host: str, port: int, *, allow_remote: bool) -> int:
    """Serve the dashboard until interrupted; 2 for a refused host."""
    try:
        check_host(host, allow_remote=allow_remote)
    except DashboardBindError as exc:
        print(f"hermes: {exc}", file=sys.stderr)
        return 2
    url = database_url(config)
    store = await open_store(url)
    try:
        auth = DashboardAuth()
        context = dashboard_context(config, Repository(store), auth)
        print(f"hermes dashboard: database {mask_url(url)}")
        if auth.from_environment:
            print(f"log in at {login_link(host, port, '<' + TOKEN_ENV + '>')}", flush=True)
        else:
            print(f"log in at {login_link(host, port, auth.token)}", flush=True)
        server = uvicorn.Server(
            uvicorn.Config(create_app(context), host=host, port=port, log_level="warning")
        )
        await server.serve()
    finally:
        await store.close()
    return 0
