"""Where a session's money went: the spend buckets of ``/usage`` and the policy's estimate."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.model_table import lookup_model
from gateway.reports.usage import clearing_savings, policy_savings, spend, spend_text
from gateway.store.records import CompactionRecord, UsageGroup, UsageTotals

SONNET = lookup_model("claude-sonnet-4-5")
MTOK = 1_000_000


def group(
    purpose: str = "chat",
    model: str = "claude-sonnet-4-5",
    visit_start: bool = False,
    **tokens: int | float,
) -> UsageGroup:
    return UsageGroup(purpose, model, UsageTotals(calls=1, **tokens), visit_start)


def compaction(trigger: str, saving: float | None, cost: float | None) -> CompactionRecord:
    return CompactionRecord(
        id=1,
        session_id=1,
        trigger=trigger,
        outcome="summarized",
        degraded=False,
        first_message_id=2,
        last_message_id=9,
        summary="s",
        summary_message_id=10,
        tokens_before=30_000,
        tokens_after=3_000,
        detail="",
        created_at=datetime(2026, 12, 3, tzinfo=UTC),
        estimated_saving_usd=saving,
        estimated_cost_usd=cost,
    )


def test_each_bucket_is_priced_at_list_prices_and_cache_multipliers() -> None:
    costs = spend(
        [
            group(visit_start=True, cache_write_tokens=MTOK, input_tokens=MTOK),
            group(cache_write_tokens=2 * MTOK, cache_write_1h_tokens=MTOK, output_tokens=MTOK),
            group(cache_read_tokens=MTOK),
            group("compression", "claude-haiku-4-5", input_tokens=MTOK, cost_usd=1.25),
        ],
        SONNET,
    )
    assert costs.visit_start_writes == pytest.approx(3.75)  # $3/Mtok x 1.25
    assert costs.other_writes == pytest.approx(3.75 + 6.0)  # one 5m, one 1h at 2x
    assert costs.reads == pytest.approx(0.3)
    assert costs.uncached == pytest.approx(3.0)
    assert costs.summaries == pytest.approx(1.25)  # as recorded, at the summary model's prices
    assert costs.output == pytest.approx(15.0)
    assert costs.total == pytest.approx(3.75 + 9.75 + 0.3 + 3.0 + 1.25 + 15.0)


def test_a_chat_model_the_table_does_not_know_is_priced_as_the_main_model() -> None:
    costs = spend([group(model="claude-sonnet-4-5-20991231-x", input_tokens=MTOK)], SONNET)
    assert costs.uncached == pytest.approx(3.0)


def test_the_policy_estimate_sums_only_its_own_compactions() -> None:
    savings = policy_savings(
        [
            compaction("cold_start", 0.40, 0.02),
            compaction("agent", None, None),
            compaction("idle", 0.10, 0.01),
        ]
    )
    assert savings.compactions == 2
    assert savings.saving_usd == pytest.approx(0.50)
    assert savings.net_usd == pytest.approx(0.47)


def test_clearings_inside_tool_loops_are_summed_apart_from_the_policy_compactions() -> None:
    compactions = [
        compaction("cold_start", 0.40, 0.02),
        compaction("prune", 0.05, 0.01),
        compaction("prune", 0.03, 0.02),
    ]
    assert policy_savings(compactions).compactions == 1
    clearings = clearing_savings(compactions)
    assert clearings.compactions == 2
    assert clearings.saving_usd == pytest.approx(0.08)
    costs = spend([group(output_tokens=MTOK)], SONNET)
    text = spend_text(costs, policy_savings(compactions), clearings)
    assert "1 cold/idle compaction(s)" in text
    assert (
        "Used tool outputs cleared inside tool loops: 2 time(s), estimated to save $0.0800 of "
        "reads for $0.0300 of cache rewrites"
    ) in text
    assert "cleared inside tool loops" not in spend_text(costs, policy_savings([]))


def test_the_text_names_every_bucket_with_its_share_and_the_estimate() -> None:
    costs = spend(
        [group(visit_start=True, cache_write_tokens=MTOK), group(output_tokens=MTOK // 4)], SONNET
    )
    text = spend_text(costs, policy_savings([compaction("cold_start", 0.4, 0.02)]))
    assert "visit-start cache writes: $3.7500 (50%)" in text
    assert "output: $3.7500 (50%)" in text
    assert "summaries: $0.0000 (0%)" in text
    assert "1 cold/idle compaction(s), estimated to save $0.4000" in text
    assert "net $0.3800" in text
    assert "no cold/idle compaction yet" in spend_text(costs, policy_savings([]))
