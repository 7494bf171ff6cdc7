"""The quick SQLite listing (no SQLAlchemy) answers exactly what the repository answers, and
declines every database it cannot read that way."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.store.locations import sqlite_path
from gateway.store.repository import Repository
from gateway.store.sqlite_listing import quick_session_list


async def _fill(repo: Repository) -> None:
    """Sessions of several keys and platforms, one replaced by /new, with 0-3 messages."""
    for n in range(6):
        key = f"telegram:{n % 4}"
        session = await repo.get_or_create_session(key, platform="telegram", chat_id=str(n))
        messages = [{"role": "user", "content": f"hello {n} {i}"} for i in range(n % 4)]
        if messages:
            await repo.append_messages(session.id, messages, [5] * len(messages))
    await repo.start_new_session("telegram:1", platform="telegram", chat_id="1")
    await repo.get_or_create_session("discord:9", platform="discord", chat_id="9")
    await repo.update_session(1, title="a title")


async def test_the_quick_list_equals_the_repositorys_list(repo: Repository, db_url: str) -> None:
    await _fill(repo)
    for limit in (None, 3, 1000):
        expected = await repo.list_sessions(limit=limit)
        assert quick_session_list(db_url, limit) == expected
    assert len(expected) == 6
    assert {s.active for s in expected} == {True, False}
    assert any(s.title == "a title" for s in expected)
    assert sorted(s.message_count for s in expected) == [0, 0, 0, 2, 2, 3]


async def test_a_database_behind_the_newest_schema_is_left_to_the_repository(
    repo: Repository, db_url: str
) -> None:
    await _fill(repo)
    path = sqlite_path(db_url)
    assert path is not None
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0001_initial'")
    assert quick_session_list(db_url, None) is None


def test_databases_it_cannot_read_are_declined(tmp_path: Path) -> None:
    assert quick_session_list(f"sqlite:///{tmp_path / 'missing.db'}", None) is None
    assert quick_session_list("postgresql://user@localhost/hermes", None) is None
    assert quick_session_list("sqlite://", None) is None
    not_a_database = tmp_path / "noise.db"
    not_a_database.write_bytes(b"not sqlite at all" * 100)
    assert quick_session_list(f"sqlite:///{not_a_database}", None) is None
    assert not (tmp_path / "missing.db").exists()  # read-only: nothing was created
