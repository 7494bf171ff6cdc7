"""Sessions: one active per key, /new keeps the old one, engine state is persisted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.exc import IntegrityError

from gateway.store.db import Store
from gateway.store.repository import NotFoundError, Repository
from gateway.store.tables import SessionRow, utcnow


async def test_get_or_create_returns_the_same_active_session_for_a_key(repo: Repository) -> None:
    first = await repo.get_or_create_session(
        "telegram:42", platform="telegram", chat_id="42", user_id="7"
    )
    again = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")

    assert again == first
    assert (first.active, first.engine, first.engine_state, first.compression_count) == (
        True,
        "compressor",
        {},
        0,
    )
    assert first.user_id == "7"
    assert first.created_at.tzinfo is not None and first.created_at.utcoffset() == timedelta(0)


async def test_start_new_session_deactivates_but_keeps_the_old_one(repo: Repository) -> None:
    old = await repo.get_or_create_session("cli:local", platform="cli", chat_id="local")
    await repo.append_messages(old.id, [{"role": "user", "content": "before /new"}], [3])

    new = await repo.start_new_session("cli:local", platform="cli", chat_id="local", engine="lcm")

    assert new.id != old.id and new.active and new.engine == "lcm"
    assert await repo.get_or_create_session("cli:local", platform="cli", chat_id="local") == new
    kept = await repo.get_session(old.id)
    assert kept is not None and kept.active is False
    assert await repo.count_messages(old.id) == 1
    assert await repo.load_context(new.id) == []
    listed = await repo.list_sessions(key="cli:local")
    assert [(s.id, s.active, s.message_count) for s in listed] == [
        (new.id, True, 0),
        (old.id, False, 1),
    ]


async def test_the_database_refuses_a_second_active_session_for_a_key(
    store: Store, repo: Repository
) -> None:
    await repo.get_or_create_session("discord:9", platform="discord", chat_id="9")
    now = utcnow()
    with pytest.raises(IntegrityError):
        async with store.sessionmaker.begin() as session:
            session.add(
                SessionRow(
                    key="discord:9",
                    platform="discord",
                    chat_id="9",
                    active=True,
                    engine="compressor",
                    engine_state={},
                    compression_count=0,
                    created_at=now,
                    updated_at=now,
                )
            )


async def test_list_sessions_counts_messages_newest_first_and_honours_limit(
    repo: Repository,
) -> None:
    ids = []
    for n in range(3):
        session = await repo.get_or_create_session(
            f"telegram:{n}", platform="telegram", chat_id=str(n)
        )
        await repo.append_messages(
            session.id, [{"role": "user", "content": "x"}] * (n + 1), [1] * (n + 1)
        )
        ids.append(session.id)

    listed = await repo.list_sessions()
    limited = await repo.list_sessions(limit=2)

    assert [(s.id, s.message_count) for s in listed] == [(ids[2], 3), (ids[1], 2), (ids[0], 1)]
    assert [s.id for s in limited] == ids[2:0:-1]


async def test_update_session_persists_engine_fields(repo: Repository) -> None:
    session = await repo.get_or_create_session("telegram:1", platform="telegram", chat_id="1")
    cooldown = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))

    await repo.update_session(
        session.id,
        last_prompt_tokens=123_456,
        engine_state={"dag": {"nodes": [[1, 2], [3]]}, "note": "naïve ✓"},
        previous_summary="so far",
        compression_count=4,
        compaction_cooldown_until=cooldown,
        title="Lisbon trip",
    )

    updated = await repo.get_session(session.id)
    assert updated is not None
    assert updated.last_prompt_tokens == 123_456
    assert updated.engine_state == {"dag": {"nodes": [[1, 2], [3]]}, "note": "naïve ✓"}
    assert (updated.previous_summary, updated.compression_count, updated.title) == (
        "so far",
        4,
        "Lisbon trip",
    )
    assert updated.compaction_cooldown_until == cooldown
    assert updated.compaction_cooldown_until is not None
    assert updated.compaction_cooldown_until.tzinfo == UTC
    assert updated.updated_at >= session.updated_at


async def test_update_session_refuses_unknown_fields_and_sessions(repo: Repository) -> None:
    session = await repo.get_or_create_session("telegram:1", platform="telegram", chat_id="1")

    with pytest.raises(ValueError, match="key"):
        await repo.update_session(session.id, key="telegram:2")
    with pytest.raises(NotFoundError):
        await repo.update_session(session.id + 100, title="nobody")
    with pytest.raises(ValueError, match="naive"):
        await repo.update_session(session.id, compaction_cooldown_until=datetime(2030, 1, 1))
