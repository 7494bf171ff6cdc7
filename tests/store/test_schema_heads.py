"""The start-up "already at head" check: heads read from revision files, branches included."""

from __future__ import annotations

from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from gateway.store.db import VERSION_LOCATIONS, alembic_config, create_store_engine, open_store
from gateway.store.schema_heads import is_at_head, script_heads


def _revision(folder: Path, name: str, down: str, annotated: bool = True) -> None:
    kind = ": str | None" if annotated else ""
    (folder / f"{name}.py").write_text(
        f'"""{name}"""\nrevision{kind} = "{name}"\ndown_revision{kind} = {down}\n'
        "def upgrade() -> None: ...\n"
    )


def test_the_project_heads_are_the_ones_alembic_finds() -> None:
    expected = set(ScriptDirectory.from_config(alembic_config()).get_heads())
    assert script_heads(VERSION_LOCATIONS) == expected


def test_branches_in_several_locations_give_every_head_and_a_merge_joins_them(
    tmp_path: Path,
) -> None:
    core, plugin = tmp_path / "core", tmp_path / "plugin"
    core.mkdir(), plugin.mkdir()
    _revision(core, "0001_a", "None")
    _revision(core, "0002_b", '"0001_a"', annotated=False)
    _revision(plugin, "lcm_0001", "None")
    _revision(plugin, "lcm_0002", "('lcm_0001',)")
    assert script_heads([core, plugin]) == {"0002_b", "lcm_0002"}
    _revision(core, "0003_merge", '("0002_b", "lcm_0002")')
    assert script_heads([core, plugin]) == {"0003_merge"}


def test_a_revision_that_is_not_a_literal_or_no_revision_at_all_means_unknown(
    tmp_path: Path,
) -> None:
    assert script_heads([tmp_path]) is None
    _revision(tmp_path, "0001_a", "None")
    (tmp_path / "0002_b.py").write_text('revision = "0002_" + "b"\ndown_revision = "0001_a"\n')
    assert script_heads([tmp_path]) is None


async def test_a_database_is_at_head_only_when_it_records_exactly_the_heads(
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}"
    engine = create_store_engine(url)
    try:
        assert not await is_at_head(engine, VERSION_LOCATIONS)  # no version table yet
        await (await open_store(url)).close()
        assert await is_at_head(engine, VERSION_LOCATIONS)
        sync = create_engine(f"sqlite:///{tmp_path / 'hermes.db'}")
        with sync.begin() as connection:
            connection.execute(text("INSERT INTO alembic_version VALUES ('lcm_0001')"))
        sync.dispose()
        assert not await is_at_head(engine, VERSION_LOCATIONS)  # a second, unknown branch
    finally:
        await engine.dispose()
