"""Spend bookkeeping in the store, on SQLite and PostgreSQL: usage rows keep whether they opened
a visit and their 1-hour writes; policy compactions keep their decision's estimate (and export
it)."""

from __future__ import annotations

import pytest

from agent.types import CompactionResult, Usage
from gateway.store.repository import Repository


async def _spend_round_trip(repo: Repository) -> None:
    session = await repo.get_or_create_session("telegram:5", platform="telegram", chat_id="5")
    ids = await repo.append_messages(
        session.id,
        [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        [1, 1],
    )
    model = "claude-sonnet-4-5"
    opening = Usage(input_tokens=10, cache_write_tokens=5000, model=model)
    later = Usage(
        input_tokens=5,
        cache_read_tokens=5000,
        cache_write_tokens=300,
        model=model,
        cache_write_1h_tokens=300,
    )
    await repo.record_usage(
        session.id, opening, provider="anthropic", cost_usd=0.02, visit_start=True
    )
    await repo.record_usage(session.id, later, provider="anthropic", cost_usd=0.003)
    # OpenRouter reports no tier split: the caller says how many writes it priced at 1h.
    await repo.record_usage(
        session.id,
        Usage(cache_write_tokens=100, model=model),
        provider="openrouter",
        cost_usd=0.0006,
        cache_write_1h_tokens=100,
    )
    result = CompactionResult(
        messages=[{"role": "system", "content": "s", "_id": ids[0]}],
        outcome="summarized",
        trigger="cold_start",
        tokens_before=5000,
        tokens_after=800,
        summary="short",
        estimated_saving_usd=0.0125,
        estimated_cost_usd=0.0031,
    )
    await repo.apply_compaction(session.id, result, {})

    groups = {(g.purpose, g.visit_start): g.totals for g in await repo.usage_breakdown(session.id)}
    [record] = await repo.list_compactions(session.id)
    exported = [line async for line in repo.export_session(session.id)]

    assert set(groups) == {("chat", True), ("chat", False)}
    assert (groups["chat", True].calls, groups["chat", True].cache_write_tokens) == (1, 5000)
    assert groups["chat", True].cache_write_1h_tokens == 0
    assert (groups["chat", False].calls, groups["chat", False].cache_write_1h_tokens) == (2, 400)
    assert (await repo.usage_totals(session.id)).cost_usd == pytest.approx(0.0236)
    assert (record.estimated_saving_usd, record.estimated_cost_usd) == (0.0125, 0.0031)
    compaction = next(line for line in exported if line["type"] == "compaction")
    assert compaction["estimated_saving_usd"] == 0.0125


async def test_spend_columns_round_trip_on_sqlite(repo: Repository) -> None:
    await _spend_round_trip(repo)


async def test_spend_columns_round_trip_on_postgres(pg_repo: Repository) -> None:
    await _spend_round_trip(pg_repo)
