"""The cost model, visit history and the cold-start rule, as pure functions."""

from __future__ import annotations

import pytest

from agent.model_table import lookup_model
from agent.policy.context_policy import (
    cache_is_cold,
    should_compact_cold,
)
from agent.policy.cost_model import Prices, expected_visit_cost, turn_cost
from agent.policy.visit_history import (
    choose_ttl,
    expected_turns_per_visit,
    gaps_between,
    visit_lengths,
)
from agent.types import CompactionEstimate

SONNET = Prices.of(lookup_model("claude-sonnet-4-5"))
HAIKU = Prices.of(lookup_model("claude-haiku-4-5"))
MINUTE = 60.0
DAY = 86_400.0


def test_prices_follow_the_documented_multipliers() -> None:
    assert SONNET.input == pytest.approx(3e-6)
    assert SONNET.cache_write == pytest.approx(3.75e-6)
    assert SONNET.cache_read == pytest.approx(0.3e-6)
    assert Prices.of(lookup_model("claude-sonnet-4-5"), "1h").cache_write == pytest.approx(6e-6)
    assert SONNET.min_cacheable_tokens == 1_024
    assert HAIKU.min_cacheable_tokens == 4_096
    with pytest.raises(ValueError, match="ttl"):
        Prices.of(lookup_model("claude-sonnet-4-5"), "2h")


def test_a_prompt_under_the_cache_minimum_is_all_uncached_input() -> None:
    assert turn_cost(SONNET, 1_000, 0) == pytest.approx(1_000 * 3e-6)
    assert turn_cost(SONNET, 2_000, 1_500) == pytest.approx(1_500 * 0.3e-6 + 500 * 3.75e-6)


def test_a_cold_visit_writes_its_first_prompt_and_reads_it_on_every_later_turn() -> None:
    cold = expected_visit_cost(
        SONNET, 10_000, cache_warm=False, expected_turns=3, growth_tokens=100
    )
    expected = (
        10_000 * 3.75e-6 + (10_000 * 0.3e-6 + 100 * 3.75e-6) + (10_100 * 0.3e-6 + 100 * 3.75e-6)
    )
    assert cold == pytest.approx(expected)
    warm = expected_visit_cost(SONNET, 10_000, cache_warm=True, expected_turns=3, growth_tokens=100)
    assert warm < cold


def test_visits_are_runs_of_messages_less_than_the_ttl_apart() -> None:
    times = [0, 30, 90, DAY, DAY + 60, 3 * DAY]
    assert visit_lengths(times, 300) == [3, 2, 1]
    assert gaps_between([0, 30, 90]) == [30, 60]


def test_expected_turns_start_at_the_prior_and_learn_from_the_sessions_visits() -> None:
    assert expected_turns_per_visit([], 300) == 8.0
    # Ten visits of 20 turns each pull the estimate close to 20.
    times = [v * DAY + t * MINUTE for v in range(10) for t in range(20)]
    assert 17 < expected_turns_per_visit(times, 300) < 20


def test_ttl_stays_five_minutes_when_gaps_are_seconds_or_days() -> None:
    gaps = [40.0] * 50 + [2 * DAY] * 10
    assert choose_ttl(gaps) == "5m"


def test_ttl_is_one_hour_where_gaps_of_five_to_sixty_minutes_are_typical() -> None:
    gaps = [20 * MINUTE] * 30 + [40.0] * 10
    assert choose_ttl(gaps) == "1h"


def test_ttl_stays_five_minutes_until_there_is_enough_history() -> None:
    assert choose_ttl([20 * MINUTE] * 3) == "5m"


def test_cache_is_cold_only_well_past_the_ttl_and_unknown_times_count_as_warm() -> None:
    assert not cache_is_cold(None, 10_000, 300)
    assert not cache_is_cold(1_000, 1_000 + 300, 300)
    assert cache_is_cold(1_000, 1_000 + DAY, 300)


def _estimate(prompt: int, compacted: int, summarized: int) -> CompactionEstimate:
    return CompactionEstimate(prompt, compacted - 1_800, summarized, summary_tokens=1_800)


def test_an_estimate_scales_local_counts_to_the_reported_prompt_size() -> None:
    scaled = CompactionEstimate(10_000, 2_000, 8_000, 1_000, summary_budget=2_000).scaled_to(14_000)
    assert scaled == CompactionEstimate(14_000, 2_800, 11_200, 1_400, summary_budget=2_000)
    assert scaled.compacted_tokens == 4_200
    capped = CompactionEstimate(10_000, 2_000, 8_000, 1_800, summary_budget=2_000).scaled_to(20_000)
    assert capped.summary_tokens == 2_000


def test_compacting_a_large_cold_prompt_with_a_cheap_summary_model_pays() -> None:
    decision = should_compact_cold(
        _estimate(35_000, 5_500, 30_000), main=SONNET, summary=HAIKU, expected_turns=10
    )
    assert decision.pays
    assert decision.saving_usd > decision.cost_usd * 1.25
    assert decision.net_saving_usd > 0
    assert "pays" in decision.reason


def test_compacting_a_small_prompt_does_not_pay() -> None:
    decision = should_compact_cold(
        _estimate(7_000, 5_500, 2_500), main=SONNET, summary=HAIKU, expected_turns=2
    )
    assert not decision.pays


def test_a_summary_by_the_main_model_pays_later_than_one_by_haiku() -> None:
    estimate = _estimate(14_000, 5_500, 9_500)
    by_haiku = should_compact_cold(estimate, main=SONNET, summary=HAIKU, expected_turns=3)
    by_sonnet = should_compact_cold(estimate, main=SONNET, summary=SONNET, expected_turns=3)
    assert by_haiku.pays and not by_sonnet.pays


def test_a_compaction_that_would_not_shrink_the_prompt_never_pays() -> None:
    decision = should_compact_cold(
        _estimate(5_000, 5_000, 1_000), main=SONNET, summary=HAIKU, expected_turns=50
    )
    assert not decision.pays
