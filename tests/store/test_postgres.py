"""The store's core scenario on a real PostgreSQL server (asyncpg), same code as on SQLite.

The server comes from tests/store/pg.py: a throwaway cluster from Debian's binaries, or
HERMES_TEST_PG_URL. Without either these tests fail with instructions; they are not skipped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from agent.types import CompactionResult, EngineState, Usage
from gateway.store.db import open_store, upgrade_database
from gateway.store.repository import Repository
from gateway.store.tables import include_core_object, metadata


@dataclass(frozen=True, slots=True)
class NestedState(EngineState):
    """An engine's state with a nested JSON value (stored as ``{"k": ...}``)."""

    k: list[Any] = field(default_factory=list)


STORE_TABLES = {"sessions", "messages", "api_usage", "compactions", "inbound"}
WRITER_TURNS = 3
TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


async def test_postgres_migrations_apply_once_and_match_the_models(pg_url: str) -> None:
    first = await upgrade_database(pg_url)
    second = await upgrade_database(pg_url)
    store = await open_store(pg_url)

    def schema_state(connection: Connection) -> tuple[set[str], str | None, list[object]]:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_name": include_core_object}
        )
        return (
            set(inspect(connection).get_table_names()),
            context.get_current_revision(),
            list(compare_metadata(context, metadata)),
        )

    try:
        async with store.engine.connect() as connection:
            tables, current, differences = await connection.run_sync(schema_state)
    finally:
        await store.close()

    assert store.dialect_name == "postgresql"
    assert first == second == current
    assert STORE_TABLES <= tables
    assert differences == []


async def test_postgres_messages_round_trip_in_context_order(pg_repo: Repository) -> None:
    session = await pg_repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    messages = [
        {"role": "user", "content": "Grüße 🌍 東京", "name": "alice"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "ok"}]},
    ]

    ids = await pg_repo.append_messages(session.id, messages, [4, 8, 2])
    more = await pg_repo.append_messages(session.id, [{"role": "user", "content": "next"}], [1])

    context = await pg_repo.load_context(session.id)
    assert [{k: v for k, v in m.items() if not k.startswith("_")} for m in context] == [
        *messages,
        {"role": "user", "content": "next"},
    ]
    assert [m["_id"] for m in context] == ids + more
    assert [r.ctx_pos for r in await pg_repo.all_messages(session.id)] == [0, 1, 2, 3]
    assert session.created_at.utcoffset() == timedelta(0)


async def test_postgres_ten_thousand_message_append(pg_repo: Repository) -> None:
    session = await pg_repo.get_or_create_session("cli:local", platform="cli", chat_id="local")

    ids = await pg_repo.append_messages(
        session.id, [{"role": "user", "content": str(i)} for i in range(10_000)], [1] * 10_000
    )

    context = await pg_repo.load_context(session.id)
    assert [m["_id"] for m in context] == ids
    assert [m["content"] for m in context] == [str(i) for i in range(10_000)]


async def test_postgres_compaction_survives_reopening(pg_url: str) -> None:
    store = await open_store(pg_url)
    repo = Repository(store)
    session = await repo.get_or_create_session("telegram:7", platform="telegram", chat_id="7")
    history = [{"role": "system", "content": "sys"}] + [
        {"role": "user", "content": f"m{i}"} for i in range(6)
    ]
    await repo.append_messages(session.id, history, [10] * len(history))
    context = await repo.load_context(session.id)
    result = CompactionResult(
        messages=[
            context[0],
            {"role": "user", "content": "sum", "_kind": "summary"},
            *context[-2:],
        ],
        outcome="summarized",
        trigger="hygiene",
        tokens_before=70,
        tokens_after=35,
        summary="sum",
        first_compacted_id=context[1]["_id"],
        last_compacted_id=context[-3]["_id"],
        engine_state=NestedState([1, [2]]),
    )
    record = await repo.apply_compaction(session.id, result, {1: 5})
    await store.close()

    reopened = await open_store(pg_url)
    try:
        repo = Repository(reopened)
        reloaded = await repo.get_session(session.id)
        new_context = await repo.load_context(session.id)
        stored = await repo.all_messages(session.id)
        compactions = await repo.list_compactions(session.id)
    finally:
        await reopened.close()

    assert reloaded is not None
    assert (reloaded.previous_summary, reloaded.compression_count) == ("sum", 1)
    assert reloaded.engine_state == {"k": [1, [2]]}
    assert [m["content"] for m in new_context] == ["sys", "sum", "m4", "m5"]
    assert new_context[1]["_id"] == record.new_message_ids[0] == record.summary_message_id
    assert len(stored) == len(history) + 1
    assert [r.in_context for r in stored] == [True, False, False, False, False, True, True, True]
    assert [c.id for c in compactions] == [record.id]


async def test_postgres_inbound_is_exactly_once_and_pending_survives_restart(pg_url: str) -> None:
    store = await open_store(pg_url)
    repo = Repository(store)
    fields = {"session_key": "telegram:42", "chat_id": "42", "user_id": "7"}
    assert await repo.record_inbound("telegram", "1", text="a", **fields) is True
    assert await repo.record_inbound("telegram", "1", text="again", **fields) is False
    assert await repo.record_inbound("telegram", "2", text="b", payload={"x": "ü"}, **fields)
    await repo.mark_inbound("telegram", "1", "done", reply_platform_ids=["r1"])
    await store.close()

    reopened = await open_store(pg_url)
    try:
        repo = Repository(reopened)
        pending = await repo.pending_inbound()
        done = await repo.get_inbound("telegram", "1")
    finally:
        await reopened.close()

    assert [(p.platform_message_id, p.payload) for p in pending] == [("2", {"x": "ü"})]
    assert done is not None and (done.text, done.status, done.reply_platform_ids) == (
        "a",
        "done",
        ("r1",),
    )


async def test_postgres_usage_totals_and_export(pg_repo: Repository) -> None:
    session = await pg_repo.get_or_create_session("discord:1", platform="discord", chat_id="1")
    await pg_repo.append_messages(session.id, [{"role": "user", "content": "hi"}], [1])
    await pg_repo.record_usage(
        session.id,
        Usage(input_tokens=100, cache_read_tokens=300),
        provider="anthropic",
        cost_usd=0.5,
    )
    await pg_repo.record_compaction_attempt(
        session.id, trigger="agent", outcome="skipped", detail="small", tokens_before=1
    )

    totals = await pg_repo.usage_totals(session.id)
    lines = [line async for line in pg_repo.export_session(session.id)]

    assert (totals.calls, totals.prompt_tokens, totals.cache_hit_rate) == (1, 400, 0.75)
    assert [(line["type"], line.get("content", line.get("outcome"))) for line in lines] == [
        ("message", "hi"),
        ("compaction", "skipped"),
    ]


async def test_postgres_twenty_concurrent_writers(pg_repo: Repository) -> None:
    async def writer(n: int) -> None:
        session = await pg_repo.get_or_create_session(
            f"discord:{n}", platform="discord", chat_id=str(n)
        )
        for turn in range(WRITER_TURNS):
            await pg_repo.append_messages(session.id, [{"role": "user", "content": str(turn)}], [1])

    await asyncio.gather(*(writer(n) for n in range(20)))

    summaries = await pg_repo.list_sessions()
    assert len(summaries) == 20
    assert {s.message_count for s in summaries} == {WRITER_TURNS}
