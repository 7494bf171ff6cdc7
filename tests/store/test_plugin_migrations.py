"""A plugin's tables come from the plugin's own migration chain, recorded in its own version
table; the core chain carries only core schema; a database made while the lossless engine's
tables were still a core revision (0002) upgrades in place, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from alembic import command
from sqlalchemy import Connection, inspect, text

from agent.engines.plugin_migrations import PluginMigrations, find_plugin_migrations
from gateway.store.db import (
    PROJECT_ROOT,
    alembic_config,
    create_store_engine,
    open_store,
    store_plugins,
)
from gateway.store.repository import Repository
from tests.lcm.test_lcm_engine import build, compact, good_model, new_session

T = TypeVar("T")
LCM_TABLES = {"lcm_nodes", "lcm_node_children"}
[LCM] = [chain for chain in find_plugin_migrations([PROJECT_ROOT]) if chain.name == "lcm"]


async def _run(url: str, job: Callable[[Connection], T]) -> T:
    engine = create_store_engine(url)
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(job)
    finally:
        await engine.dispose()


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


def _versions(connection: Connection, table: str) -> list[str]:
    return [row[0] for row in connection.execute(text(f"SELECT version_num FROM {table}"))]


def _build_before_the_split(connection: Connection) -> None:
    """What the old chain left: revision 0002 also made the lcm tables, the later core
    revisions ran over them, and no plugin version table exists."""
    for chain, target in ((None, "0002"), (LCM, "head"), (None, "head")):
        config = alembic_config(chain)
        config.attributes["connection"] = connection
        command.upgrade(config, target)
    connection.execute(text(f"DROP TABLE {LCM.version_table}"))


def test_the_lcm_plugin_declares_its_chain_in_its_own_folder() -> None:
    assert LCM.location == PROJECT_ROOT / "plugins" / "context_engine" / "lcm" / "migrations"
    assert LCM.version_table == "alembic_version_lcm"
    assert LCM in store_plugins()


async def test_the_core_chain_alone_creates_no_plugin_table(any_db_url: str) -> None:
    await (await open_store(any_db_url, plugins=[])).close()

    tables = await _run(any_db_url, _tables)

    assert {"sessions", "messages", "alembic_version"} <= tables
    assert not tables & (LCM_TABLES | {LCM.version_table})


async def test_the_plugin_chain_runs_after_the_core_in_its_own_version_table(
    any_db_url: str,
) -> None:
    await (await open_store(any_db_url)).close()

    def state(connection: Connection) -> tuple[set[str], list[str], list[str]]:
        return (
            _tables(connection),
            _versions(connection, "alembic_version"),
            _versions(connection, LCM.version_table),
        )

    tables, core, plugin = await _run(any_db_url, state)
    assert LCM_TABLES <= tables
    assert len(core) == 1 and not core[0].startswith("lcm")
    assert plugin == ["lcm_0001"]


async def test_a_database_from_before_the_split_upgrades_in_place_and_keeps_its_nodes(
    any_db_url: str, tmp_path: Path
) -> None:
    await _run(any_db_url, _build_before_the_split)
    # The old daemon's lossless engine writes nodes into the old database (core schema current).
    old = await open_store(any_db_url, plugins=[])
    try:
        repo = Repository(old)
        session, context = await new_session(repo)
        engine = build(repo, good_model, tmp_path)
        await engine.on_session_start(session.id, engine.state_type())
        await compact(engine, repo, session.id, context)
        nodes_before = await engine.store.nodes([session.id])
    finally:
        await old.close()
    assert nodes_before

    store = await open_store(any_db_url)  # a new start: finds the tables, records the chain
    try:
        repo = Repository(store)
        engine = build(repo, good_model, tmp_path)
        await engine.on_session_start(session.id, engine.state_type())
        nodes_after = await engine.store.nodes([session.id])
        summaries = await engine.handle_tool_call(
            "lcm_grep", {"query": "earlier step", "scope": "summaries"}
        )
        versions = await _run(any_db_url, lambda c: _versions(c, LCM.version_table))
    finally:
        await store.close()

    assert nodes_after == nodes_before
    assert f"[lcm node {nodes_before[0].id}" in summaries
    assert versions == ["lcm_0001"]


async def test_an_upgraded_old_database_has_the_schema_of_a_new_one(tmp_path: Path) -> None:
    old_url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    new_url = f"sqlite+aiosqlite:///{tmp_path / 'new.db'}"
    await _run(old_url, _build_before_the_split)
    await (await open_store(old_url)).close()
    await (await open_store(new_url)).close()

    def schema(connection: Connection) -> list[tuple[str, str]]:
        rows = connection.execute(text("SELECT name, sql FROM sqlite_master ORDER BY name"))
        return [(name, sql) for name, sql in rows]

    assert await _run(old_url, schema) == await _run(new_url, schema)


def test_a_home_plugin_folder_with_revisions_is_found_once_per_name(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    for root, name in ((project, "notes"), (home, "notes"), (home, "other"), (home, "bare")):
        folder = root / "plugins" / "context_engine" / name
        (folder / "migrations").mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        if name != "bare":
            (folder / "migrations" / f"{name}_0001.py").write_text('revision = "x"\n')

    found = find_plugin_migrations([project, home])

    notes = project / "plugins" / "context_engine" / "notes" / "migrations"
    other = home / "plugins" / "context_engine" / "other" / "migrations"
    assert found == [PluginMigrations("notes", notes), PluginMigrations("other", other)]
