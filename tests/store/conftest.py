"""Fixtures for the store tests: a fresh SQLite file per test, opened through open_store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.store.db import Store, default_database_url, open_store
from gateway.store.repository import Repository


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A database URL for a SQLite file that does not exist yet (its directory neither)."""
    return default_database_url(tmp_path / "home")


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """The store opened (and migrated) on a fresh file, closed after the test."""
    opened = await open_store(db_url)
    yield opened
    await opened.close()


@pytest.fixture
def repo(store: Store) -> Repository:
    """The repository over the test's store."""
    return Repository(store)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_repo(request: pytest.FixtureRequest) -> Repository:
    """The repository on a fresh SQLite file, then on the throwaway PostgreSQL."""
    name = "repo" if request.param == "sqlite" else "pg_repo"
    return request.getfixturevalue(name)
