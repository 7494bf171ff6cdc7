"""The overnight replay's accounting: prices per bucket, realistic summaries, the update check."""

from __future__ import annotations

from typing import Any

import pytest

from bench.overnight_costs import breakdown
from bench.overnight_model import SummaryLog, SummaryRequest, summary_references, summary_text
from sandbox.anthropic_prompt import text_tokens
from sandbox.anthropic_records import RequestRecord

SONNET = "claude-sonnet-4-5"
HAIKU = "claude-haiku-4-5"


def record(model: str, usage: dict[str, Any], last_user_text: str = "hi") -> RequestRecord:
    return RequestRecord(
        model=model,
        status=200,
        usage=usage,
        n_messages=1,
        max_tokens=100,
        system_text="",
        last_user_text=last_user_text,
        breakpoints=[],
        body={},
    )


def usage(
    uncached: int, written: int, read: int, output: int, written_1h: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": uncached,
        "cache_creation_input_tokens": written + written_1h,
        "cache_read_input_tokens": read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": written,
            "ephemeral_1h_input_tokens": written_1h,
        },
        "output_tokens": output,
    }


def test_each_request_is_priced_into_its_bucket_at_list_prices_and_cache_multipliers() -> None:
    records = [
        record(SONNET, usage(100, 1_000_000, 0, 0)),  # a visit's first message: cold rewrite
        record(SONNET, usage(0, 0, 1_000_000, 1_000, written_1h=1_000_000)),
        record(HAIKU, usage(1_000_000, 0, 0, 1_000_000), "Write a structured summary of ..."),
        record(SONNET, usage(1_000_000, 0, 0, 0)),
    ]

    costs = breakdown(records, [True, False, False, False], SONNET)

    assert costs.visit_start_writes == pytest.approx(3.75)  # $3/Mtok x 1.25
    assert costs.other_writes == pytest.approx(6.0)  # 1h writes at 2x
    assert costs.reads == pytest.approx(0.3)
    assert costs.uncached == pytest.approx(3.0 + 0.0003)
    assert costs.summaries == pytest.approx(1.0 + 5.0)  # Haiku 4.5: $1 in, $5 out
    assert costs.output == pytest.approx(0.015)
    assert costs.total == pytest.approx(sum(value for _, value in costs.items()))


def test_refused_requests_cost_nothing() -> None:
    refused = record(SONNET, {})
    refused.status = 400

    assert breakdown([refused], [True], SONNET).total == 0


def test_a_summary_has_the_asked_size_and_keeps_earlier_references() -> None:
    previous = "<previous-summary>\n- Summary reference C2-1.\n</previous-summary>"
    body = {"messages": [{"role": "user", "content": f"{previous}\nnew turns"}], "max_tokens": 900}

    text = summary_text(body, "Summary reference C2-2", 800)

    assert abs(text_tokens(text) - 800) <= 2
    assert summary_references(text) == {(2, 1), (2, 2)}


def test_a_summary_request_must_contain_the_newest_applied_summary_of_its_conversation() -> None:
    log = SummaryLog(
        [
            SummaryRequest(0, 1, frozenset()),
            SummaryRequest(0, 2, frozenset()),  # 1 was skipped, never applied: fine
            SummaryRequest(0, 3, frozenset({2})),
            SummaryRequest(1, 1, frozenset()),
            SummaryRequest(0, 4, frozenset({2})),  # started over without 3: not an update
        ]
    )

    assert log.missing_previous({(0, 2), (0, 3), (1, 1)}) == 1
