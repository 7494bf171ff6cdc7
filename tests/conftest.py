"""Fixtures shared by every test package: an offline environment, one PostgreSQL server.

The PostgreSQL server (and its driver, the ``postgres`` extra) is loaded only when a test asks
for it: a checkout without the extra still collects and runs every other test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gateway.store.db import Store, open_store
from gateway.store.repository import Repository
from tests.hang_report import reporting_hangs

if TYPE_CHECKING:
    from tests.store.pg import PostgresServer


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test still running after HERMES_TEST_HANG_SECONDS prints where its tasks wait and
    fails (see :mod:`tests.hang_report`)."""
    capture = item.config.pluginmanager.getplugin("capturemanager")
    uncaptured = capture.global_and_fixture_disabled if capture is not None else nullcontext
    with reporting_hangs(item.nodeid, item.name.split("[")[0], uncaptured):
        return (yield)


@pytest.fixture
def offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No model keys or endpoints from the developer's shell, no proxy for local servers, and
    ``$HERMES_HOME`` in the test's directory; returns that home."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    home = tmp_path / "home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole test run (a fresh cluster unless HERMES_TEST_PG_URL)."""
    from tests.store.pg import postgres_server  # only where a test uses the server

    with postgres_server() as server:
        yield server


@pytest.fixture
async def pg_url(postgres: PostgresServer) -> AsyncIterator[str]:
    """A fresh, empty database for one test."""
    name = f"hermes_test_{uuid.uuid4().hex[:12]}"
    url = await postgres.create_database(name)
    yield url
    await postgres.drop_database(name)


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[Store]:
    """The store opened (and migrated) on the test's database."""
    store = await open_store(pg_url)
    yield store
    await store.close()


@pytest.fixture
def pg_repo(pg_store: Store) -> Repository:
    """The repository over the test's PostgreSQL store."""
    return Repository(pg_store)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database on each backend in turn: a SQLite file, then a PostgreSQL database."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}"
