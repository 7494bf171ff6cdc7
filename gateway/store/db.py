"""Opening the store: the engine, SQLite connection pragmas and schema migrations at start-up.

The schema is owned by the alembic revisions in ``migrations/`` (core) and by each context-engine
plugin's own chain (``plugins/context_engine/<name>/migrations/``, see
:mod:`agent.engines.plugin_migrations`); :func:`open_store` brings any database up to the newest
revisions, core first, before handing out a :class:`Store`, so the daemon, the CLI and the tests
all run against the same schema. Upgrading an up-to-date database does nothing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import NullPool

from agent.engines.plugin_migrations import PluginMigrations, find_plugin_migrations
from gateway.settings.home import hermes_home
from gateway.store.locations import DATABASE_FILE_NAME as DATABASE_FILE_NAME
from gateway.store.locations import MIGRATIONS_DIR, VERSION_LOCATIONS
from gateway.store.locations import default_database_url as default_database_url
from gateway.store.schema_heads import is_at_head
from gateway.store.writer import BatchWriter, T, WriteFence, WriteJob

if TYPE_CHECKING:
    import alembic.config

SQLITE_BUSY_TIMEOUT_MS = 10_000
"""How long a SQLite connection waits for another writer; far longer than any write we make."""

SQLITE_CONNECT_PRAGMAS = (
    # WAL lets readers run while one writer writes; NORMAL sync is durable across app crashes.
    "PRAGMA journal_mode=WAL",
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
)

PROJECT_ROOT = MIGRATIONS_DIR.parent
"""The project folder: ``plugins/context_engine/`` under it holds the bundled engine plugins."""

MIGRATIONS_LOCK_KEY = 0x4845524D_0001
"""The PostgreSQL advisory lock the migrations run under ("HERM" then 1): gateways started
together on one database migrate one after the other, the later ones finding nothing to do."""

ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}
"""The asyncio driver used for a URL that names only the database (``postgresql://...``)."""


@dataclass(eq=False)
class Store:
    """An open database: the engine, a session factory, the single-writer lock and the writer.

    Every write is a job run by :attr:`writer` in group commits (:meth:`write`), context
    engines' writes to their own tables included (:class:`gateway.store.archive.StoreArchive`):
    one writer writes at a time, so concurrent tasks never meet "database is locked" on
    SQLite. Use :class:`gateway.store.Repository` for queries; engines get the archive.
    """

    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    sync_engine: Engine | None = None
    """SQLite files: the writer's own synchronous engine (one connection on its own thread)."""
    live_anchors: set[tuple[str, str, str]] | None = None
    """(platform, chat, inbound message) of every recent reply shown live, loaded on first use
    (gateway/store/repository_live.py): most replies have none, and need no query to know it."""
    fence: WriteFence | None = None
    """Failover: the leader's epoch check every write batch begins with (None: no fencing)."""
    writer: BatchWriter = field(init=False)

    def __post_init__(self) -> None:
        self.writer = BatchWriter(self.engine, self.write_lock, self.sync_engine, self.fence)

    async def write(self, job: WriteJob[T]) -> T:
        """Run a write job in the next group commit (see :mod:`gateway.store.writer`)."""
        return await self.writer.run(job)

    @property
    def dialect_name(self) -> str:
        """The backend's name: ``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    async def close(self) -> None:
        """Finish queued writes and close every connection. The store cannot be used afterwards."""
        try:
            await self.writer.close()
        finally:
            await self.engine.dispose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


def create_store_engine(url: str) -> AsyncEngine:
    """Build the async engine for ``url`` with the store's connection settings.

    A URL naming only the database (``sqlite:///...``, ``postgresql://...``) gets the asyncio
    driver. For SQLite files the parent directory is created and the pragmas in
    :data:`SQLITE_CONNECT_PRAGMAS` are set on every new connection.
    """
    parsed = _normalise_url(make_url(url))
    # hide_parameters: a database error's text (which ends up in logs) never quotes the values
    # of a statement, i.e. users' messages.
    engine = create_async_engine(parsed, hide_parameters=True)
    if engine.dialect.name == "sqlite":
        _create_sqlite_parent_dir(parsed)
        event.listen(engine.sync_engine, "connect", _apply_sqlite_pragmas)
    return engine


def store_plugins() -> list[PluginMigrations]:
    """The plugin chains run on every store: the project's plugin folders, then
    ``$HERMES_HOME``'s (see :mod:`agent.engines.plugin_migrations`)."""
    return find_plugin_migrations((PROJECT_ROOT, hermes_home()))


async def open_store(
    url: str,
    plugins: Sequence[PluginMigrations] | None = None,
    *,
    fence: WriteFence | None = None,
) -> Store:
    """Open the database at ``url``, upgrading its schema to the newest revisions first: the
    core chain, then each of ``plugins`` (by default :func:`store_plugins`). With ``fence``
    (failover, PostgreSQL) every write batch is fenced by the leader's epoch."""
    engine = create_store_engine(url)
    chains = store_plugins() if plugins is None else plugins
    try:
        # Nearly every start finds the schema current: then alembic is not even imported.
        if not await _all_at_head(engine, chains):
            await _upgrade_to_head(engine, chains)
    except BaseException:
        await engine.dispose()
        raise
    sessionmaker = async_sessionmaker(engine, expire_on_commit=False)
    return Store(
        engine=engine,
        sessionmaker=sessionmaker,
        sync_engine=_sqlite_writer_engine(engine),
        fence=fence,
    )


async def upgrade_database(url: str, plugins: Sequence[PluginMigrations] | None = None) -> str:
    """Bring the database at ``url`` to the newest schema (``hermes db upgrade``): the core
    chain, then each of ``plugins`` (by default :func:`store_plugins`).

    Returns the core revision the database is at afterwards, which is the core head.
    """
    engine = create_store_engine(url)
    try:
        return await _upgrade_to_head(engine, store_plugins() if plugins is None else plugins)
    finally:
        await engine.dispose()


def alembic_config(plugin: PluginMigrations | None = None) -> alembic.config.Config:
    """An alembic configuration for the core chain (or ``plugin``'s), with no ini file.

    Both use ``migrations/env.py``: a plugin's configuration reads only the plugin's revision
    folder and records them in the plugin's version table. Without an ini file the environment
    leaves logging alone and expects the connection in ``config.attributes["connection"]``.
    """
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    locations = VERSION_LOCATIONS if plugin is None else (plugin.location,)
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("path_separator", "os")
    config.set_main_option("version_locations", os.pathsep.join(map(str, locations)))
    if plugin is not None:
        config.attributes["version_table"] = plugin.version_table
    return config


async def _all_at_head(engine: AsyncEngine, plugins: Sequence[PluginMigrations]) -> bool:
    if not await is_at_head(engine, VERSION_LOCATIONS):
        return False
    for plugin in plugins:
        if not await is_at_head(engine, (plugin.location,), plugin.version_table):
            return False
    return True


async def _upgrade_to_head(engine: AsyncEngine, plugins: Sequence[PluginMigrations]) -> str:
    """Run ``alembic upgrade head`` for the core chain, then for each plugin's, on one
    connection of ``engine`` inside the running loop; returns the core revision.

    On PostgreSQL the whole upgrade runs in one transaction holding
    :data:`MIGRATIONS_LOCK_KEY`, so any number of gateways started at once migrate once."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    def upgrade(connection: Connection) -> str:
        for plugin in (None, *plugins):
            config = alembic_config(plugin)
            # env.py picks the connection up here instead of calling asyncio.run() itself.
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
        revision = MigrationContext.configure(connection).get_current_revision()
        if revision is None:
            raise RuntimeError("alembic upgrade finished without recording a revision")
        return revision

    async with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # Held to the commit: a second host waits here, then finds every chain at head.
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATIONS_LOCK_KEY}
            )
        return await connection.run_sync(upgrade)


def _sqlite_writer_engine(engine: AsyncEngine) -> Engine | None:
    """A synchronous pysqlite engine on the same file for the writer; None when not SQLite or
    when the database lives only inside the async engine's connection (``:memory:``)."""
    url = engine.url
    database = url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:") and "mode=memory" in database:
        return None
    sync_engine = create_engine(url.set(drivername="sqlite+pysqlite"), poolclass=NullPool)
    event.listen(sync_engine, "connect", _apply_sqlite_writer_pragmas)
    event.listen(sync_engine, "begin", _begin_immediate)
    return sync_engine


def _apply_sqlite_writer_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    _apply_sqlite_pragmas(dbapi_connection, connection_record)
    # Transactions are begun explicitly (below), not implicitly by the driver before DML.
    dbapi_connection.isolation_level = None


def _begin_immediate(connection: Connection) -> None:
    # IMMEDIATE takes SQLite's write lock at BEGIN: the reads inside a write job see the state
    # it writes over, even if another process writes to the file too.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def async_url(url: str) -> URL:
    """``url`` with the asyncio driver the store uses for its backend."""
    return _normalise_url(make_url(url))


def _normalise_url(url: URL) -> URL:
    driver = ASYNC_DRIVERS.get(url.drivername)
    if driver:
        url = url.set(drivername=driver)
    if url.drivername.startswith("sqlite") and url.database and url.database.startswith("~"):
        url = url.set(database=str(Path(url.database).expanduser()))
    return url


def _create_sqlite_parent_dir(url: URL) -> None:
    database = url.database
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).parent.mkdir(parents=True, exist_ok=True)


def _apply_sqlite_pragmas(dbapi_connection: Any, _connection_record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        for pragma in SQLITE_CONNECT_PRAGMAS:
            cursor.execute(pragma)
    finally:
        cursor.close()
