"""``/usage`` through the real session runtime, SQLite and the Anthropic emulator: the spend per
bucket matches the emulator's own cache accounting of the same requests (priced by the
overnight benchmark's independent pricing), token totals match its counters, and a cold-start
compaction's estimated saving is reported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.types import COLD_TRIGGERS
from bench.overnight_costs import breakdown
from gateway.commands import Command, run_local
from gateway.config.schema import parse_config
from gateway.reports.usage import BUCKET_LABELS, policy_savings, spend
from gateway.runtime.app import open_app
from gateway.sessions.runtime import SessionAddress
from gateway.store.records import UsageTotals
from sandbox.anthropic_api import AnthropicEmulator

KEY_ENV = "HERMES_TEST_USAGE_KEY"
ADDRESS = SessionAddress("telegram:11", "telegram", "11", "11")
MAIN = "claude-sonnet-4-5"
START = 1_764_000_000.0
MINUTE = 60.0
DAY = 86_400.0
FILLER = "We went through the plan for the billing migration step by step again. " * 14


@pytest.fixture(autouse=True)
def _key(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")


def visit(start: float, turns: int, first: int) -> list[tuple[float, str]]:
    return [
        (start + i * MINUTE, f"turn {first + i}: fact #{first + i} is {i * 7919}. {FILLER}")
        for i in range(turns)
    ]


async def test_usage_splits_the_spend_as_the_emulator_accounted_it(tmp_path: Path) -> None:
    transcript = [
        *visit(START, 40, 0),
        *visit(START + 2 * DAY, 3, 40),
        *visit(START + 5 * DAY, 2, 43),
    ]
    visit_starts = {0, 40, 43}
    emulator = AnthropicEmulator(reply_tokens=300)
    await emulator.start()
    config = parse_config(
        {
            "model": {"base_url": emulator.base_url, "api_key_env": KEY_ENV, "max_retries": 0},
            "database": {"url": f"sqlite+aiosqlite:///{tmp_path / 'usage.db'}"},
        }
    )
    try:
        async with open_app(config) as app:
            for sent_at, text in transcript:
                emulator.clock.advance_to(sent_at)
                await app.sessions.run_turn(ADDRESS, text, sent_at=sent_at)
            runtime = await app.sessions.get(ADDRESS)
            await runtime.agent.compactions.settled()
            text = await run_local(app.sessions, ADDRESS, Command("usage", ""))
            groups = await app.repo.usage_breakdown(runtime.session_id)
            compactions = await app.repo.list_compactions(runtime.session_id)
    finally:
        await emulator.stop()

    chat = [r for r in emulator.requests if r.model == MAIN]
    assert len(chat) == len(transcript), "one model call per turn (no tools)"
    flags = []
    turn = 0
    for record in emulator.requests:
        flags.append(record.model == MAIN and turn in visit_starts)
        turn += record.model == MAIN
    expected = breakdown(emulator.requests, flags, MAIN)
    ours = spend(groups, runtime.services.model)
    for (bucket, usd), (same, want) in zip(ours.items(), expected.items(), strict=True):
        assert bucket == same
        assert usd == pytest.approx(want, rel=1e-9, abs=1e-12), bucket
    assert expected.visit_start_writes > 0 and expected.summaries > 0
    totals = sum((g.totals for g in groups), UsageTotals())
    stats = emulator.stats
    assert (totals.input_tokens, totals.output_tokens) == (stats.input_tokens, stats.output_tokens)
    assert (totals.cache_read_tokens, totals.cache_write_tokens) == (
        stats.cache_read_tokens,
        stats.cache_write_tokens,
    )
    assert totals.cost_usd == pytest.approx(ours.total, rel=1e-9)

    cold = [c for c in compactions if c.trigger in COLD_TRIGGERS]
    assert cold and all(c.estimated_saving_usd and c.estimated_cost_usd for c in cold)
    others = [c for c in compactions if c.trigger not in COLD_TRIGGERS]
    assert all(c.estimated_saving_usd is None for c in others)
    savings = policy_savings(compactions)
    assert savings.compactions == len(cold) and savings.net_usd > 0

    for label in BUCKET_LABELS.values():
        assert re.search(rf"^  {label}: \$\d+\.\d{{4}} \(\d+%\)$", text, re.M), label
    assert f"estimated to save ${savings.saving_usd:.4f}" in text
    assert f"Cost: ${totals.cost_usd:.4f}" in text
