"""The schema comes only from alembic, is applied by open_store and is idempotent."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Connection

from gateway.store.db import alembic_config, default_database_url, open_store, upgrade_database
from gateway.store.repository import Repository
from gateway.store.tables import include_core_object, metadata

REPO_ROOT = Path(__file__).resolve().parents[2]
STORE_TABLES = {"sessions", "messages", "api_usage", "compactions", "inbound"}


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def sync_url(db_file: Path) -> str:
    return f"sqlite:///{db_file}"


def current_revision(db_file: Path) -> str | None:
    engine = create_engine(sync_url(db_file))
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def test_default_database_url_points_at_hermes_db_under_home(tmp_path: Path) -> None:
    assert default_database_url(tmp_path) == f"sqlite+aiosqlite:///{tmp_path}/hermes.db"


async def test_open_store_creates_the_file_and_every_table_at_head(tmp_path: Path) -> None:
    db_file = tmp_path / "not" / "yet" / "there" / "hermes.db"

    store = await open_store(f"sqlite+aiosqlite:///{db_file}")
    await store.close()

    assert db_file.exists()
    assert current_revision(db_file) == head_revision()
    engine = create_engine(sync_url(db_file))
    assert STORE_TABLES <= set(inspect(engine).get_table_names())
    engine.dispose()


async def test_upgrading_an_up_to_date_database_changes_nothing(tmp_path: Path) -> None:
    url = default_database_url(tmp_path)
    first = await upgrade_database(url)
    schema_before = _schema_sql(tmp_path / "hermes.db")

    second = await upgrade_database(url)
    store = await open_store(url)  # open_store upgrades too
    await store.close()

    assert first == second == head_revision()
    assert _schema_sql(tmp_path / "hermes.db") == schema_before


async def test_migrated_schema_matches_the_models(tmp_path: Path) -> None:
    await upgrade_database(default_database_url(tmp_path))

    def differences(connection: Connection) -> list[object]:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_name": include_core_object}
        )
        return list(compare_metadata(context, metadata))

    engine = create_engine(sync_url(tmp_path / "hermes.db"))
    with engine.connect() as connection:
        assert differences(connection) == []
    engine.dispose()


async def test_connections_use_wal_busy_timeout_normal_sync_and_foreign_keys(
    tmp_path: Path,
) -> None:
    store = await open_store(default_database_url(tmp_path))
    async with store.engine.connect() as connection:
        pragmas = {
            name: (await connection.execute(text(f"PRAGMA {name}"))).scalar()
            for name in ("journal_mode", "busy_timeout", "synchronous", "foreign_keys")
        }
    await store.close()

    # synchronous: 1 is NORMAL.
    assert pragmas == {
        "journal_mode": "wal",
        "busy_timeout": 10000,
        "synchronous": 1,
        "foreign_keys": 1,
    }


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """alembic.ini configures logging (as a command line should); undo it for other tests."""
    loggers = [logging.getLogger(name) for name in ("", "alembic", "sqlalchemy.engine")]
    saved = [(logger, logger.level, list(logger.handlers)) for logger in loggers]
    yield
    for logger, level, handlers in saved:
        logger.setLevel(level)
        logger.handlers[:] = handlers


@pytest.mark.usefixtures("restore_logging")
def test_alembic_command_line_upgrades_the_database_named_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_file = tmp_path / "cli" / "hermes.db"
    monkeypatch.setenv("HERMES_DATABASE_URL", f"sqlite+aiosqlite:///{db_file}")
    config = Config(str(REPO_ROOT / "alembic.ini"))

    command.upgrade(config, "head")

    assert current_revision(db_file) == head_revision()


def _schema_sql(db_file: Path) -> list[tuple[str, str]]:
    engine = create_engine(sync_url(db_file))
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT name, sql FROM sqlite_master ORDER BY name"))
        schema = [(name, sql) for name, sql in rows]
    engine.dispose()
    return schema


async def test_an_in_memory_database_is_migrated_and_usable() -> None:
    store = await open_store("sqlite+aiosqlite://")
    try:
        repo = Repository(store)
        session = await repo.get_or_create_session("cli:local", platform="cli", chat_id="local")
        await repo.append_messages(session.id, [{"role": "user", "content": "hi"}], [1])
        context = await repo.load_context(session.id)
    finally:
        await store.close()

    assert [m["content"] for m in context] == ["hi"]
