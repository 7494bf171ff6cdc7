"""Fixtures shared by every test package: one throwaway PostgreSQL server for the whole run."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from gateway.store import Repository, Store, open_store
from tests.store.pg import PostgresServer, postgres_server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole test run (a fresh cluster unless HERMES_TEST_PG_URL)."""
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
