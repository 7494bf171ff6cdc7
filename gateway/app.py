"""Opening and closing the pieces a command needs: store, repository, services, sessions."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from gateway.config import Config
from gateway.redaction import install_log_sanitizer
from gateway.services import AgentServices, build_services
from gateway.sessions import SessionManager
from gateway.store.db import Store, database_url, open_store
from gateway.store.repository import Repository

__all__ = ["QUIET_LIBRARIES", "App", "configure_logging", "database_url", "open_app"]


@dataclass(slots=True)
class App:
    """Everything a running command shares."""

    config: Config
    store: Store
    repo: Repository
    services: AgentServices
    sessions: SessionManager


QUIET_LIBRARIES = (
    "httpx",
    "httpcore",
    "httpx2",  # the HTTP client of newer anthropic SDKs
    "httpcore2",
    "telegram",
    "discord",
    "aiosqlite",
    "alembic",
    "anthropic",
    "openai",
)
"""Libraries logged at WARNING or above whatever the level: at DEBUG they log request bodies
and SQL parameters, so users' words."""


def configure_logging(config: Config) -> None:
    """Log to stderr at the configured level (:data:`QUIET_LIBRARIES` at WARNING at least),
    with secrets masked in every record."""
    logging.basicConfig(
        level=getattr(logging, config.logging.level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in QUIET_LIBRARIES:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.root.level))
    install_log_sanitizer(config)


@asynccontextmanager
async def open_app(config: Config) -> AsyncIterator[App]:
    """Open the store (applying migrations), build services and a session manager.

    Secrets are masked in the log from here on, also when the caller configured logging itself.
    """
    install_log_sanitizer(config)
    store = await open_store(database_url(config))
    try:
        repo = Repository(store)
        services = build_services(config, repo)
        sessions = SessionManager(services)
        try:
            yield App(config, store, repo, services, sessions)
        finally:
            await sessions.close()
            await services.aclose()
    finally:
        await store.close()
