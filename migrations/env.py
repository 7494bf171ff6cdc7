"""Alembic environment for the Hermes Gateway store (SQLite and PostgreSQL).

Two ways in:

* From the daemon (:func:`gateway.store.db.open_store`) inside a running event loop: the caller
  passes a synchronous connection in ``config.attributes["connection"]`` and this module runs
  the revisions on it, without touching logging or the event loop.
* From the ``alembic`` command line (``alembic upgrade head`` at the repository root): the
  database URL comes from ``HERMES_DATABASE_URL``, else ``sqlalchemy.url`` in ``alembic.ini``,
  else the default SQLite file under ``$HERMES_HOME`` (``~/.hermes``).

``render_as_batch`` makes ALTERs work on SQLite by copying the table; the naming convention on
the metadata gives every constraint a stable name for that copy.

A plugin's own chain (:mod:`agent.engines.plugin_migrations`) runs through this environment too: the
daemon points ``version_locations`` at the plugin's folder and names the plugin's version table
in ``config.attributes["version_table"]``.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig
from pathlib import Path

from alembic import context
from sqlalchemy.engine import Connection

from gateway.store.db import create_store_engine, default_database_url
from gateway.store.schema_heads import VERSION_TABLE
from gateway.store.tables import include_core_object, metadata

DEFAULT_HERMES_HOME = "~/.hermes"


def run_migrations_on(connection: Connection) -> None:
    """Run the pending revisions on ``connection``."""
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,
        compare_type=True,
        include_name=include_core_object,
        version_table=context.config.attributes.get("version_table", VERSION_TABLE),
    )
    with context.begin_transaction():
        context.run_migrations()


def command_line_database_url() -> str:
    """The database the ``alembic`` command line works on."""
    configured = os.environ.get("HERMES_DATABASE_URL") or context.config.get_main_option(
        "sqlalchemy.url"
    )
    if configured:
        return configured
    home = Path(os.environ.get("HERMES_HOME", DEFAULT_HERMES_HOME))
    return default_database_url(home)


async def run_migrations_from_command_line(url: str) -> None:
    """Open an engine for ``url`` and run the revisions on one connection."""
    engine = create_store_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(run_migrations_on)
    finally:
        await engine.dispose()


def run_migrations_offline(url: str) -> None:
    """Write the SQL of the pending revisions instead of running it (``alembic upgrade --sql``)."""
    context.configure(
        url=url,
        target_metadata=metadata,
        render_as_batch=True,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    """Pick the way in: a connection handed over by the daemon, or the command line."""
    config = context.config
    connection = config.attributes.get("connection")
    if connection is not None:
        run_migrations_on(connection)
        return
    # Only the command line has an ini file; configuring logging otherwise would reset the app's.
    if config.config_file_name is not None:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    url = command_line_database_url()
    if context.is_offline_mode():
        run_migrations_offline(url)
    else:
        asyncio.run(run_migrations_from_command_line(url))


main()
