"""The overnight-cost replay: a tiny set through the real daemon, accounted consistently.

Two policies replay a small seed at a window small enough to compact often; nothing may be lost
or refused, and the cost breakdown must add up to what the emulator itself counted. No cost
ratios and no timings are asserted here: those are the benchmark's to print.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.model_table import CACHE_READ_MULTIPLIER, CACHE_WRITE_5M_MULTIPLIER, lookup_model
from bench.gateway_load import MODEL_KEY_ENV, TELEGRAM_TOKEN_ENV
from bench.overnight_cost import ANCHOR, NEW, render, run_bench
from bench.overnight_replay import ReplayResult
from bench.tool_transcripts import ToolTranscriptSpec, generate_tools
from bench.transcripts import TranscriptSpec, generate

SMALL = TranscriptSpec(conversations=2, turns=50, turns_per_visit=6.0, system_prompt_tokens=900)
SMALL_WINDOW = 6_000
"""Small enough that the anchor compacts several times in 50 turns."""


@pytest.fixture(autouse=True)
def _isolated_env(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The replay puts the secrets into the environment; these make them leave with the test.
    monkeypatch.setenv(TELEGRAM_TOKEN_ENV, "")
    monkeypatch.setenv(MODEL_KEY_ENV, "")


def emulator_counted_usd(result: ReplayResult) -> float:
    """The run's cost from the emulator's own token totals (every write is a 5m write here)."""
    total = 0.0
    for model, tokens in result.tokens_by_model.items():
        info = lookup_model(model)
        cached_input = (
            tokens.input_tokens
            + tokens.cache_write_tokens * CACHE_WRITE_5M_MULTIPLIER
            + tokens.cache_read_tokens * CACHE_READ_MULTIPLIER
        )
        total += cached_input * info.input_per_mtok + tokens.output_tokens * info.output_per_mtok
    return total / 1_000_000


async def test_a_small_replay_loses_nothing_and_its_breakdown_adds_up() -> None:
    transcripts = generate(3, SMALL)

    report = await run_bench(
        transcripts, windows=(SMALL_WINDOW,), policies=(ANCHOR, NEW), latency_conversations=0
    )

    assert [result.run.policy for result in report.costs] == [ANCHOR, NEW]
    for result in report.costs:
        assert result.problems == []
        assert result.answered == result.turns == transcripts.turns
        assert (result.lost, result.invalid_requests, result.over_window) == (0, 0, 0)
        assert result.summaries_without_previous == 0
        assert all(value >= 0 for _, value in result.costs.items())
        assert result.costs.visit_start_writes > 0 and result.costs.output > 0
        assert sum(value for _, value in result.costs.items()) == pytest.approx(result.costs.total)
        assert result.costs.total == pytest.approx(emulator_counted_usd(result))
    anchor = report.costs[0]
    assert anchor.summary_requests > 0 and anchor.costs.summaries > 0
    assert sum(anchor.compactions.values()) > 0
    printed = render(report)
    assert "new/anchor 6K" in printed and printed.splitlines()[-1].startswith("OK")


async def test_a_small_tool_replay_makes_every_call_and_loses_nothing() -> None:
    transcripts = generate_tools(5, ToolTranscriptSpec(conversations=1, turns=6))
    planned = sum(len(step) for turn in transcripts.timeline for step in turn.steps)

    report = await run_bench(
        transcripts, windows=(32_000,), policies=(ANCHOR, NEW), latency_conversations=0
    )

    assert planned > 0
    for result in report.costs:
        assert result.problems == []
        assert (result.lost, result.invalid_requests, result.over_window) == (0, 0, 0)
        assert result.answered == result.turns == transcripts.turns
        assert result.tool_calls == planned + result.page_reads
        assert 0 < result.largest_prompt <= 32_000
        assert result.costs.total == pytest.approx(emulator_counted_usd(result))
    assert "tool calls" in render(report)
