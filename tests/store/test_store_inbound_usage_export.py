"""Inbound exactly-once records, usage totals, and the JSONL-ready session export."""

from __future__ import annotations

import json

import pytest

from agent.types import CompactionResult, Usage
from gateway.store.db import open_store
from gateway.store.repository import NotFoundError, Repository


async def record(repo: Repository, message_id: str, text: str = "hello") -> bool:
    return await repo.record_inbound(
        "telegram", message_id, session_key="telegram:42", chat_id="42", user_id="7", text=text
    )


async def test_a_redelivered_message_is_recognised_as_duplicate(repo: Repository) -> None:
    assert await record(repo, "1001", "first delivery") is True
    assert await record(repo, "1001", "redelivery") is False

    inbound = await repo.get_inbound("telegram", "1001")
    assert inbound is not None
    assert (inbound.text, inbound.status, inbound.payload) == ("first delivery", "pending", {})
    # The same id on another platform is another message.
    assert await repo.record_inbound(
        "discord", "1001", session_key="discord:1", chat_id="1", user_id=None, text="hi"
    )


async def test_unfinished_messages_are_pending_after_a_restart(db_url: str) -> None:
    store = await open_store(db_url)
    repo = Repository(store)
    for message_id in ("1", "2", "3", "4"):
        await record(repo, message_id, f"text {message_id}")
    await repo.record_inbound(
        "discord",
        "d1",
        session_key="discord:1",
        chat_id="1",
        user_id="u",
        text="hi",
        payload={"guild": "g"},
    )
    await repo.mark_inbound("telegram", "1", "done", reply_platform_ids=["r1", "r2"])
    await repo.mark_inbound("telegram", "2", "processing")
    await repo.mark_inbound("telegram", "3", "refused")
    await store.close()

    reopened = await open_store(db_url)
    try:
        repo = Repository(reopened)
        pending = await repo.pending_inbound()
        telegram_pending = await repo.pending_inbound("telegram")
        done = await repo.get_inbound("telegram", "1")
    finally:
        await reopened.close()

    assert [(p.platform, p.platform_message_id, p.status) for p in pending] == [
        ("telegram", "2", "processing"),
        ("telegram", "4", "pending"),
        ("discord", "d1", "pending"),
    ]
    assert pending[2].payload == {"guild": "g"}
    assert [p.platform_message_id for p in telegram_pending] == ["2", "4"]
    assert done is not None and done.reply_platform_ids == ("r1", "r2")


async def test_marking_refuses_unknown_statuses_and_messages(repo: Repository) -> None:
    await record(repo, "1")

    with pytest.raises(ValueError, match="status"):
        await repo.mark_inbound("telegram", "1", "lost")
    with pytest.raises(NotFoundError):
        await repo.mark_inbound("telegram", "never-seen", "done")


async def test_a_merged_batch_is_closed_together_or_not_at_all(repo: Repository) -> None:
    for message_id in ("1", "2", "3"):
        await record(repo, message_id)

    await repo.close_inbound("telegram", ["1", "2"], "done", replies={"2": ["r9"]})
    with pytest.raises(NotFoundError, match="never-seen"):
        await repo.close_inbound("telegram", ["3", "never-seen"], "done")

    closed = [await repo.get_inbound("telegram", message_id) for message_id in ("1", "2", "3")]
    assert [(c.status, c.reply_platform_ids) for c in closed if c is not None] == [
        ("done", ()),
        ("done", ("r9",)),
        ("pending", ()),
    ]


async def test_usage_totals_sum_calls_and_compute_the_cache_hit_rate(repo: Repository) -> None:
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    other = await repo.start_new_session("telegram:43", platform="telegram", chat_id="43")

    await repo.record_usage(
        session.id,
        Usage(input_tokens=1000, output_tokens=200, cache_write_tokens=3000, model="claude-x"),
        provider="anthropic",
        cost_usd=0.02,
    )
    await repo.record_usage(
        session.id,
        Usage(input_tokens=500, output_tokens=100, cache_read_tokens=5500, model="claude-x"),
        provider="anthropic",
        cost_usd=0.005,
        purpose="compression",
    )
    await repo.record_usage(other.id, Usage(input_tokens=7), provider="anthropic", cost_usd=1.0)
    await repo.record_usage(None, Usage(input_tokens=9), provider="anthropic", cost_usd=1.0)

    totals = await repo.usage_totals(session.id)
    empty = await repo.usage_totals(session.id + 100)

    assert (totals.calls, totals.input_tokens, totals.output_tokens) == (2, 1500, 300)
    assert (totals.cache_read_tokens, totals.cache_write_tokens) == (5500, 3000)
    assert totals.cost_usd == pytest.approx(0.025)
    assert totals.prompt_tokens == 10_000
    assert totals.cache_hit_rate == pytest.approx(0.55)
    assert (empty.calls, empty.cache_hit_rate) == (0, 0.0)


async def test_export_contains_every_message_then_every_compaction(repo: Repository) -> None:
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    messages = [{"role": "user", "content": f"line {i} — ü"} for i in range(1203)]
    ids = await repo.append_messages(session.id, messages, [2] * len(messages))
    context = await repo.load_context(session.id)
    await repo.apply_compaction(
        session.id,
        CompactionResult(
            messages=[{"role": "user", "content": "summary", "_kind": "summary"}, *context[-3:]],
            outcome="summarized",
            trigger="manual",
            tokens_before=2406,
            tokens_after=10,
            summary="summary",
        ),
        {0: 4},
    )
    await repo.record_compaction_attempt(
        session.id, trigger="agent", outcome="failed", detail="boom", tokens_before=10
    )

    lines = [line async for line in repo.export_session(session.id)]

    exported_messages = [line for line in lines if line["type"] == "message"]
    compactions = [line for line in lines if line["type"] == "compaction"]
    assert lines == exported_messages + compactions
    assert [m["id"] for m in exported_messages] == [*ids, max(ids) + 1]
    assert exported_messages[0]["content"] == "line 0 — ü"
    assert exported_messages[0]["in_context"] is False
    assert exported_messages[-1]["kind"] == "summary"
    assert [c["outcome"] for c in compactions] == ["summarized", "failed"]
    assert isinstance(compactions[0]["created_at"], str)
    json.dumps(lines)  # every line is JSON-safe
