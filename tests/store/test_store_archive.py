"""The store as engines see it (MessageArchive): messages by range and id, sessions of one
chat, search, and an engine's own records written through the group-commit writer."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, text

from agent.engines.message_archive import MessageArchive
from gateway.store import Repository, Store
from gateway.store.archive import StoreArchive


@pytest.fixture
def archive(store: Store) -> MessageArchive:
    return StoreArchive(store)


async def _session(repo: Repository, key: str, texts: list[str]) -> tuple[int, list[int]]:
    session = await repo.start_new_session(key, platform="cli", chat_id=key)
    messages = [{"role": "user", "content": t} for t in texts]
    ids = await repo.append_messages(session.id, messages, [3] * len(messages))
    return session.id, ids


async def test_messages_come_by_session_range_and_id_with_their_bookkeeping(
    repo: Repository, archive: MessageArchive
) -> None:
    session_id, ids = await _session(repo, "cli:a", ["one", "two", "three", "four"])
    await _session(repo, "cli:b", ["elsewhere"])

    everything = await archive.session_messages(session_id)
    middle = await archive.session_messages(session_id, ids[1], ids[2])
    picked = await archive.messages_by_id([ids[3], ids[0], 999_999])

    assert [m.message["content"] for m in everything] == ["one", "two", "three", "four"]
    assert [m.id for m in middle] == ids[1:3]
    assert [m.id for m in picked] == [ids[0], ids[3]]
    assert all(m.kind == "message" and m.token_count == 3 for m in everything)
    assert everything[0].message["_id"] == ids[0]
    assert everything[0].created_at.tzinfo is not None


async def test_sessions_sharing_a_key_are_the_chats_earlier_sessions_too(
    repo: Repository, archive: MessageArchive
) -> None:
    first, _ = await _session(repo, "cli:a", ["old"])
    second, _ = await _session(repo, "cli:a", ["new"])
    other, _ = await _session(repo, "cli:b", ["other"])

    assert sorted(await archive.sessions_sharing_key(second, 10)) == [first, second]
    assert await archive.sessions_sharing_key(other, 10) == [other]
    assert await archive.sessions_sharing_key(999_999, 10) == []


async def test_search_finds_said_messages_and_leaves_out_what_skip_refuses(
    repo: Repository, archive: MessageArchive
) -> None:
    session_id, ids = await _session(
        repo, "cli:a", ["the plumquist code", "nothing here", "plumquist again, skip me"]
    )

    found = await archive.search_messages("plumquist", [session_id], 10)
    kept = await archive.search_messages(
        "plumquist", [session_id], 10, skip=lambda hit: "skip me" in hit.text
    )
    either = await archive.search_messages("plumquist absentword", [session_id], 10)

    assert sorted(h.id for h in found) == [ids[0], ids[2]]
    assert [h.id for h in kept] == [ids[0]]
    assert kept[0].text == "the plumquist code" and kept[0].role == "user"
    assert sorted(h.id for h in either) == [ids[0], ids[2]], "SQLite falls back to any word"


async def test_an_engines_own_records_are_written_by_the_stores_writer(
    store: Store, archive: MessageArchive
) -> None:
    def create(connection: Connection) -> None:
        connection.execute(text("CREATE TABLE example_notes (id INTEGER PRIMARY KEY, body TEXT)"))

    def add(connection: Connection) -> int:
        result = connection.execute(text("INSERT INTO example_notes (body) VALUES ('kept')"))
        return int(result.lastrowid)

    def read(connection: Connection) -> list[str]:
        return list(connection.execute(text("SELECT body FROM example_notes")).scalars())

    jobs_before = store.writer.stats.jobs
    await archive.write_records(create)
    note_id = await archive.write_records(add)

    assert note_id == 1
    assert await archive.read_records(read) == ["kept"]
    assert store.writer.stats.jobs == jobs_before + 2
