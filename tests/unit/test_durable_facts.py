"""Durable facts at compaction: the section a summary reply carries, split off from the summary,
and merged into memory without duplicates; the built-in compressor asks for it only when the
host keeps facts. The summary model (the network edge) is a fake."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.engines.toolkit.durable_facts import split_durable_facts
from agent.memory import MemoryEntry, new_facts
from tests.unit.test_context_compressor import SUMMARY_TEXT, FakeSummaryModel, compressor, history

REPLY = f"""{SUMMARY_TEXT}
<durable-facts>
- The user's name is Ada.
- Ada prefers answers in French
-
- The user's name is Ada.
</durable-facts>"""


def entry(text: str) -> MemoryEntry:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    return MemoryEntry(1, text, now, now)


def test_the_facts_section_is_split_off_the_summary_each_fact_once() -> None:
    summary, facts = split_durable_facts(REPLY)
    assert summary == SUMMARY_TEXT
    assert facts == ["The user's name is Ada.", "Ada prefers answers in French"]


def test_a_reply_without_the_section_or_cut_inside_it_still_splits() -> None:
    assert split_durable_facts(SUMMARY_TEXT) == (SUMMARY_TEXT, [])
    cut = f"{SUMMARY_TEXT}\n<durable-facts>\n- Ada lives in Lyon"
    assert split_durable_facts(cut) == (SUMMARY_TEXT, ["Ada lives in Lyon"])


def test_facts_already_remembered_or_past_the_limit_are_not_added() -> None:
    known = [entry("The user's name is Ada")]
    facts = ["the user's  name is ADA.", "Ada prefers French", "Ada prefers French", "x" * 50]
    assert new_facts(known, facts, max_chars=60) == ["Ada prefers French"]
    assert new_facts([entry("Ada prefers French answers")], ["Ada prefers French"], 100) == []


async def test_the_compressor_asks_for_durable_facts_only_when_the_host_keeps_them() -> None:
    keeping, plain = FakeSummaryModel([REPLY]), FakeSummaryModel([REPLY])
    kept = await compressor(keeping, collect_durable_facts=True).compact(history(20), "agent")
    summary_only = await compressor(plain).compact(history(20), "agent")

    assert "<durable-facts>" in keeping.prompts[0] and "<durable-facts>" not in plain.prompts[0]
    assert kept.durable_facts == ["The user's name is Ada.", "Ada prefers answers in French"]
    assert kept.summary == SUMMARY_TEXT
    assert summary_only.durable_facts == []
