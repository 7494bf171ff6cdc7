"""The session's prompt size: one value, changed by API reports, appended messages and
compactions, read by the engine, the loop, hygiene and /status."""

from __future__ import annotations

from agent.engines.prompt_size import PromptSize
from agent.types import CompactionResult, Usage


def result(outcome: str, tokens_after: int) -> CompactionResult:
    return CompactionResult(
        messages=[],
        outcome=outcome,  # type: ignore[arg-type]
        trigger="agent",
        tokens_before=10_000,
        tokens_after=tokens_after,
    )


def test_nothing_is_known_before_the_first_report_even_after_messages_were_added() -> None:
    size = PromptSize()
    size.grow(500)
    assert size.current is None


def test_the_next_prompt_is_the_reported_size_plus_what_was_appended_since() -> None:
    size = PromptSize()
    size.observe(Usage(input_tokens=100, cache_read_tokens=9_000, cache_write_tokens=400))
    size.grow(250)
    size.grow(50)
    assert (size.reported, size.current) == (9_500, 9_800)
    size.observe(Usage(input_tokens=10_000))
    assert size.current == 10_000


def test_a_compaction_sets_its_estimate_and_a_skipped_one_changes_nothing() -> None:
    size = PromptSize()
    size.observe(Usage(input_tokens=10_000))
    size.grow(300)
    size.compacted(result("skipped", 10_000))
    assert size.current == 10_300
    size.compacted(result("summarized", 2_000))
    assert (size.reported, size.current) == (2_000, 2_000)


def test_a_stored_size_is_restored_without_what_was_added_before() -> None:
    size = PromptSize()
    size.observe(Usage(input_tokens=1_000))
    size.grow(99)
    size.restore(4_321)
    assert size.current == 4_321
