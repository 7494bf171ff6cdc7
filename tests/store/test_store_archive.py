"""The store as engines see it (MessageArchive): messages by range and id, sessions of one
chat, search, and an engine's own records (queries, changes written through the group-commit
writer, full-text search) described without SQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Connection, text

from agent.engines.message_archive import (
    Between,
    DeleteRows,
    InsertedId,
    InsertRows,
    MessageArchive,
    RecordQuery,
    RecordSearch,
    RecordTableError,
    RowsOf,
    UpdateRows,
)
from gateway.store.archive import StoreArchive
from gateway.store.db import Store
from gateway.store.repository import Repository


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


def _create_notes(connection: Connection) -> None:
    """Setup: an engine's own tables, as its migration would make them."""
    connection.execute(
        text(
            "CREATE TABLE example_notes (id SERIAL PRIMARY KEY, session_id INTEGER NOT NULL,"
            " body TEXT NOT NULL, parent_id INTEGER, noted_at TIMESTAMP WITH TIME ZONE)"
            if connection.dialect.name == "postgresql"
            else "CREATE TABLE example_notes (id INTEGER PRIMARY KEY,"
            " session_id INTEGER NOT NULL, body TEXT NOT NULL, parent_id INTEGER,"
            " noted_at DATETIME)"
        )
    )
    connection.execute(
        text("CREATE TABLE example_links (parent_id INTEGER NOT NULL, child_id INTEGER NOT NULL)")
    )
    if connection.dialect.name == "sqlite":
        connection.execute(
            text(
                "CREATE VIRTUAL TABLE example_notes_fts USING fts5(body,"
                " content='example_notes', content_rowid='id')"
            )
        )
        connection.execute(
            text(
                "CREATE TRIGGER example_notes_fts_insert AFTER INSERT ON example_notes BEGIN"
                " INSERT INTO example_notes_fts(rowid, body) VALUES (new.id, new.body); END"
            )
        )


async def test_an_engines_own_records_are_written_by_the_stores_writer(
    store: Store, archive: MessageArchive
) -> None:
    await store.write(_create_notes)

    jobs_before = store.writer.stats.jobs
    inserted = await archive.write_records(
        InsertRows("example_notes", [{"session_id": 1, "body": "kept"}], id_column="id")
    )

    assert inserted == [[1]]
    read = RecordQuery("example_notes", columns=("body",))
    assert await archive.read_records(read) == [{"body": "kept"}]
    assert store.writer.stats.jobs == jobs_before + 1


async def test_a_write_links_rows_it_inserts_and_deletes_through_a_subquery(
    any_repo: Repository,
) -> None:
    archive = StoreArchive(any_repo.store)
    await any_repo.store.write(_create_notes)
    noon = datetime(2026, 12, 3, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    children = await archive.write_records(
        InsertRows(
            "example_notes",
            [{"session_id": 1, "body": "a"}, {"session_id": 1, "body": "b"}],
            id_column="id",
        )
    )
    child_ids = children[0]

    inserted = await archive.write_records(
        InsertRows("example_notes", [{"session_id": 1, "body": "ab", "noted_at": noon}], "id"),
        InsertRows(
            "example_links", [{"parent_id": InsertedId(0), "child_id": c} for c in child_ids]
        ),
        UpdateRows("example_notes", {"id": child_ids}, {"parent_id": InsertedId(0)}),
    )
    parent_id = inserted[0][0]
    await archive.write_records(
        InsertRows("example_notes", [{"session_id": 2, "body": "elsewhere"}])
    )
    rows = await archive.read_records(
        RecordQuery("example_notes", {"session_id": 1}, order_by=("id",))
    )
    ranged = await archive.read_records(
        RecordQuery("example_notes", {"id": Between(child_ids[1], None)}, columns=("id",))
    )

    assert inserted[1:] == [[], []]
    assert [row["parent_id"] for row in rows] == [parent_id, parent_id, None]
    assert rows[2]["noted_at"] == noon.astimezone(UTC)
    assert [row["id"] for row in ranged] == [child_ids[1], parent_id, parent_id + 1]

    session_notes = RowsOf("example_notes", "id", {"session_id": 1})
    await archive.write_records(
        DeleteRows("example_links", {"parent_id": session_notes}),
        DeleteRows("example_notes", {"session_id": 1}),
    )

    assert await archive.read_records(RecordQuery("example_links")) == []
    left = await archive.read_records(RecordQuery("example_notes", columns=("body",)))
    assert left == [{"body": "elsewhere"}]


async def test_a_record_search_finds_words_best_first_and_leaves_out_skipped_rows(
    any_repo: Repository,
) -> None:
    archive = StoreArchive(any_repo.store)
    await any_repo.store.write(_create_notes)
    bodies = ["the plumquist plan", "plumquist plumquist, skip me", "unrelated", "plumquist"]
    rows = [{"session_id": 1, "body": body} for body in bodies]
    ids = (await archive.write_records(InsertRows("example_notes", rows, "id")))[0]
    await archive.write_records(
        InsertRows("example_notes", [{"session_id": 2, "body": "plumquist"}])
    )

    def search(query: str) -> RecordSearch:
        return RecordSearch("example_notes", "body", query, {"session_id": 1}, ("id", "body"))

    found = await archive.search_records(search("plumquist"))
    kept = await archive.search_records(
        search("plumquist"), skip=lambda row: "skip" in str(row["body"])
    )

    assert sorted(row["id"] for row in found) == [ids[0], ids[1], ids[3]]
    assert sorted(row["id"] for row in kept) == [ids[0], ids[3]]
    assert await archive.search_records(search("?!")) == []


async def test_an_engine_may_not_use_the_hosts_tables(
    store: Store, archive: MessageArchive
) -> None:
    with pytest.raises(RecordTableError):
        await archive.read_records(RecordQuery("messages"))
    with pytest.raises(RecordTableError):
        await archive.write_records(DeleteRows("sessions", {}))
    with pytest.raises(RecordTableError):
        await archive.read_records(RecordQuery("no_such_table"))
