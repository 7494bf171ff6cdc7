"""Compaction rewrites which messages are in context; it never deletes, and it is recorded."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from agent.types import CompactionResult, EngineState
from gateway.store.db import open_store
from gateway.store.repository import Repository


@dataclass(frozen=True, slots=True)
class FocusState(EngineState):
    """An engine's state with a nested value, as the store keeps it (JSON)."""

    focus: str = ""
    nested: list[Any] = field(default_factory=list)


SUMMARY_TEXT = "Alice plans a Lisbon trip in May on 1800 euros."


async def session_with_history(repo: Repository, turns: int = 4) -> tuple[int, list[dict]]:
    session = await repo.get_or_create_session("telegram:7", platform="telegram", chat_id="7")
    history = [{"role": "system", "content": "You are Hermes."}]
    for turn in range(turns):
        history.append({"role": "user", "content": f"question {turn}"})
        history.append({"role": "assistant", "content": f"answer {turn}"})
    await repo.append_messages(session.id, history, [10] * len(history))
    return session.id, await repo.load_context(session.id)


def summarised(context: list[dict], *, keep_last: int = 2, **overrides: object) -> CompactionResult:
    """The system prompt, a new summary, a rewritten (derived) message, then the last turns."""
    middle = context[1:-keep_last]
    fields: dict = {
        "messages": [
            context[0],
            {"role": "user", "content": SUMMARY_TEXT, "_kind": "summary"},
            {"role": "assistant", "content": "[older tool output pruned]"},
            *context[-keep_last:],
        ],
        "outcome": "summarized",
        "trigger": "agent",
        "tokens_before": 90,
        "tokens_after": 40,
        "summary": SUMMARY_TEXT,
        "detail": "summarised 6 messages",
        "first_compacted_id": middle[0]["_id"],
        "last_compacted_id": middle[-1]["_id"],
        "engine_state": FocusState("Lisbon", [1, [2]]),
    }
    fields.update(overrides)
    return CompactionResult(**fields)


async def test_compaction_moves_replaced_messages_out_of_context_and_keeps_them(
    repo: Repository,
) -> None:
    session_id, context = await session_with_history(repo)
    result = summarised(context)

    record = await repo.apply_compaction(session_id, result, {1: 15, 2: 6})

    new_context = await repo.load_context(session_id)
    summary_id, derived_id = record.new_message_ids
    assert [m["_id"] for m in new_context] == [context[0]["_id"], summary_id, derived_id] + [
        m["_id"] for m in context[-2:]
    ]
    assert [m["content"] for m in new_context] == [m["content"] for m in result.messages]
    assert new_context[1]["_kind"] == "summary" and new_context[1]["_tokens"] == 15
    assert new_context[2]["_kind"] == "derived" and new_context[2]["_tokens"] == 6

    stored = {r.id: r for r in await repo.all_messages(session_id)}
    assert len(stored) == len(context) + 2  # nothing deleted
    for message in context[1:-2]:
        assert stored[message["_id"]].in_context is False
        assert stored[message["_id"]].ctx_pos is None
    in_context = sorted((r for r in stored.values() if r.in_context), key=lambda r: r.ctx_pos or 0)
    assert [r.ctx_pos for r in in_context] == [0, 1, 2, 3, 4]


async def test_compaction_is_recorded_and_updates_the_session(repo: Repository) -> None:
    session_id, context = await session_with_history(repo)

    record = await repo.apply_compaction(session_id, summarised(context), {})

    # Only apply_compaction's caller learns which rows it inserted; the stored record is the same.
    assert await repo.list_compactions(session_id) == [replace(record, new_message_ids=())]
    assert record.trigger == "agent" and record.outcome == "summarized" and not record.degraded
    assert record.summary == SUMMARY_TEXT
    assert record.summary_message_id == record.new_message_ids[0]
    assert (record.first_message_id, record.last_message_id) == (
        context[1]["_id"],
        context[-3]["_id"],
    )
    assert (record.tokens_before, record.tokens_after) == (90, 40)
    session = await repo.get_session(session_id)
    assert session is not None
    assert session.previous_summary == SUMMARY_TEXT
    assert session.compression_count == 1
    assert session.engine_state == {"focus": "Lisbon", "nested": [1, [2]]}


async def test_summary_and_context_survive_reopening_the_store(db_url: str) -> None:
    store = await open_store(db_url)
    repo = Repository(store)
    session_id, context = await session_with_history(repo)
    await repo.apply_compaction(session_id, summarised(context), {1: 15})
    expected_context = await repo.load_context(session_id)
    await store.close()

    reopened = await open_store(db_url)
    try:
        repo = Repository(reopened)
        session = await repo.get_or_create_session("telegram:7", platform="telegram", chat_id="7")
        assert session.id == session_id
        assert session.previous_summary == SUMMARY_TEXT
        assert await repo.load_context(session_id) == expected_context
        assert len(await repo.list_compactions(session_id)) == 1
    finally:
        await reopened.close()


async def test_a_second_compaction_can_drop_an_earlier_summary(repo: Repository) -> None:
    session_id, context = await session_with_history(repo)
    await repo.apply_compaction(session_id, summarised(context), {})
    after_first = await repo.load_context(session_id)

    second = CompactionResult(
        messages=[after_first[0], {"role": "user", "content": "newer summary", "_kind": "summary"}],
        outcome="summarized",
        trigger="manual",
        tokens_before=40,
        tokens_after=20,
        summary="newer summary",
    )
    await repo.apply_compaction(session_id, second, {})

    assert [m["content"] for m in await repo.load_context(session_id)] == [
        "You are Hermes.",
        "newer summary",
    ]
    session = await repo.get_session(session_id)
    assert session is not None
    assert (session.previous_summary, session.compression_count) == ("newer summary", 2)
    assert session.engine_state == {"focus": "Lisbon", "nested": [1, [2]]}  # empty state kept old


async def test_skipped_compaction_leaves_count_and_summary_alone(repo: Repository) -> None:
    session_id, context = await session_with_history(repo)

    skipped = CompactionResult(
        messages=context, outcome="skipped", trigger="hygiene", tokens_before=90, tokens_after=90
    )
    record = await repo.apply_compaction(session_id, skipped, {})

    assert record.new_message_ids == ()
    assert await repo.load_context(session_id) == context
    session = await repo.get_session(session_id)
    assert session is not None
    assert (session.compression_count, session.previous_summary) == (0, None)


async def test_failed_attempt_is_recorded_without_touching_the_context(repo: Repository) -> None:
    session_id, context = await session_with_history(repo)

    record = await repo.record_compaction_attempt(
        session_id,
        trigger="emergency",
        outcome="failed",
        detail="summary model timed out",
        tokens_before=90,
    )

    assert await repo.load_context(session_id) == context
    (listed,) = await repo.list_compactions(session_id)
    assert listed == record
    assert (listed.outcome, listed.degraded, listed.detail) == (
        "failed",
        True,
        "summary model timed out",
    )
    assert listed.tokens_after == 90


async def test_a_message_of_another_session_is_refused_and_nothing_changes(
    repo: Repository,
) -> None:
    session_id, context = await session_with_history(repo)
    other = await repo.get_or_create_session("telegram:8", platform="telegram", chat_id="8")
    (foreign_id,) = await repo.append_messages(
        other.id, [{"role": "user", "content": "not yours"}], [1]
    )

    bad = summarised(context)
    bad.messages.append({"role": "user", "content": "not yours", "_id": foreign_id})
    with pytest.raises(ValueError, match="does not hold"):
        await repo.apply_compaction(session_id, bad, {})

    assert await repo.load_context(session_id) == context
    assert await repo.list_compactions(session_id) == []
    assert await repo.load_context(other.id) == [
        {"role": "user", "content": "not yours", "_id": foreign_id, "_tokens": 1}
    ]
