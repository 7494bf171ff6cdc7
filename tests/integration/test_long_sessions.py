"""Long sessions through ``hermes chat``: compaction keeps every request inside the window,
summaries are updated rather than rewritten, and summary failures lose nothing."""

from __future__ import annotations

import itertools

import pytest

from gateway.store.db import open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.conftest import run_cli, write_config

CONTEXT = 32_000
SUMMARY_PHRASE = "structured summary"


def _turns(n: int) -> list[str]:
    filler = "We keep discussing the migration plan for the billing service in detail. " * 6
    return [f"turn {i}: remember fact #{i} is {i * 7919 % 10007}. {filler}" for i in range(n)]


async def _stored(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    try:
        repo = Repository(store)
        [session] = await repo.list_sessions()
        return await repo.all_messages(session.id), await repo.list_compactions(session.id)
    finally:
        await store.close()


async def _usage_groups(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    try:
        repo = Repository(store)
        [session] = await repo.list_sessions()
        return await repo.usage_breakdown(session.id)
    finally:
        await store.close()


async def _chat_in_small_window(tmp_path, script, *, fault=None, **sections):
    """Run ``script`` through ``hermes chat`` against an emulator with a CONTEXT window;
    ``fault`` is injected first. Returns the CLI result and the emulator (stopped)."""
    emulator = AnthropicEmulator(context_length=CONTEXT, reply_tokens=120)
    await emulator.start()
    try:
        if fault is not None:
            emulator.inject_fault(fault, count=3, contains=SUMMARY_PHRASE, delay=3.0)
        model = {"context_length": CONTEXT, **sections.pop("model", {})}
        config = write_config(tmp_path, emulator.base_url, model=model, **sections)
        result = await run_cli(
            "chat", "--config", str(config), stdin="\n".join(script) + "\n", limit=400
        )
    finally:
        await emulator.stop()
    return result, emulator


def _summary_requests(emulator: AnthropicEmulator):
    return [
        r
        for r in emulator.requests
        if SUMMARY_PHRASE in (r.last_user_text or "").lower() and r.status == 200
    ]


async def test_300_turns_in_a_32k_window_compact_repeatedly_without_losing_anything(tmp_path):
    script = _turns(300)
    result, emulator = await _chat_in_small_window(tmp_path, script)
    assert result.code == 0, result.stderr
    replies = result.replies()
    assert len(replies) == 300
    assert not any("too long" in r or "Sorry" in r for r in replies)
    assert emulator.stats.rejected_400 == 0
    assert max(r.prompt_tokens for r in emulator.requests) < CONTEXT

    summaries = _summary_requests(emulator)
    assert len(summaries) >= 3, "several compactions should have happened"
    for previous, later in itertools.pairwise(summaries):
        assert previous.reply_text.strip()[:200] in later.last_user_text, (
            "later summaries update the previous one"
        )

    stored, compactions = await _stored(tmp_path)
    assert [m.content for m in stored if m.role == "user" and m.kind == "message"] == script
    assert sum(c.outcome in ("summarized", "chunked") for c in compactions) == len(compactions) >= 3
    in_context = [m for m in stored if m.in_context]
    assert len(in_context) < len(stored) / 4


@pytest.mark.parametrize("fault", ["529", "slow"])
async def test_summary_outage_falls_back_tells_the_user_and_recovers(tmp_path, fault):
    """Overloaded (529) or timing out (slower than auxiliary.compression.timeout): the
    compaction falls back, the user is told, nothing is lost, and a later one succeeds."""
    # The first compaction's three attempts fail; the model "recovers" afterwards.
    script = _turns(120)
    result, emulator = await _chat_in_small_window(
        tmp_path,
        script,
        fault=fault,
        auxiliary={"compression": {"timeout": 1.0}},
        context={"compressor": {"retry_delays": [0.01, 0.01], "cooldown_seconds": 0}},
    )
    assert result.code == 0, result.stderr
    assert len(result.replies()) == 120
    notices = [line for line in result.stdout.splitlines() if line.startswith("notice> ")]
    assert notices, "the user is told when compaction ran without the summary model"
    stored, compactions = await _stored(tmp_path)
    assert [m.content for m in stored if m.role == "user" and m.kind == "message"] == script
    outcomes = [c.outcome for c in compactions]
    assert outcomes[0] == "fallback" and compactions[0].degraded
    assert "summarized" in outcomes[1:], (
        f"a later compaction succeeds once the model recovers: {outcomes}"
    )
    assert emulator.stats.rejected_400 == 0


async def test_a_summary_request_is_retried_by_one_layer_only(tmp_path):
    """The SDK never retries a summary call: with ``model.max_retries: 2`` and one compressor
    retry, a summary refused twice is two HTTP attempts and a fallback (not six attempts)."""
    result, emulator = await _chat_in_small_window(
        tmp_path,
        _turns(90),
        fault="529",
        model={"max_retries": 2},
        context={"compressor": {"retry_delays": [0.01], "cooldown_seconds": 0}},
    )
    assert result.code == 0, result.stderr
    _, compactions = await _stored(tmp_path)
    assert compactions[0].outcome == "fallback"
    summary_calls = [
        r for r in emulator.requests if SUMMARY_PHRASE in (r.last_user_text or "").lower()
    ]
    assert [r.status for r in summary_calls] == [529, 529], "one compaction: two attempts"


async def test_summary_model_with_a_small_window_summarises_in_chunks(tmp_path):
    script = _turns(90)
    result, emulator = await _chat_in_small_window(
        tmp_path, script, auxiliary={"compression": {"context_length": 6_000}}
    )
    assert result.code == 0, result.stderr
    stored, compactions = await _stored(tmp_path)
    assert [m.content for m in stored if m.role == "user" and m.kind == "message"] == script
    assert compactions and compactions[0].outcome == "chunked"
    assert all(r.prompt_tokens <= 6_000 for r in _summary_requests(emulator))


async def test_summaries_go_to_the_cheapest_model_by_default_and_are_billed_at_its_prices(
    tmp_path,
):
    script = [*_turns(90), "/status"]
    result, emulator = await _chat_in_small_window(tmp_path, script)
    assert result.code == 0, result.stderr
    assert "Summary model: claude-haiku-4-5 (auto-detected" in result.stdout

    summaries = _summary_requests(emulator)
    assert summaries, "the session compacted"
    assert {r.model for r in summaries} == {"claude-haiku-4-5"}
    chat_models = {r.model for r in emulator.requests if r not in summaries}
    assert chat_models == {"claude-sonnet-4-5"}

    groups = {(g.purpose, g.model): g.totals for g in await _usage_groups(tmp_path)}
    haiku = groups[("compression", "claude-haiku-4-5")]
    assert haiku.calls == len(summaries)
    haiku_price = (haiku.input_tokens * 1.0 + haiku.output_tokens * 5.0) / 1e6
    assert haiku.cost_usd == pytest.approx(haiku_price)


async def test_an_explicit_summary_model_overrides_the_auto_detected_one(tmp_path):
    script = _turns(90)
    result, emulator = await _chat_in_small_window(
        tmp_path, script, auxiliary={"compression": {"model": "claude-sonnet-4-5"}}
    )
    assert result.code == 0, result.stderr
    summaries = _summary_requests(emulator)
    assert summaries and {r.model for r in summaries} == {"claude-sonnet-4-5"}
