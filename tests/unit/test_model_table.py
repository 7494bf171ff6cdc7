"""The model table: lookups by native, dated, alias and OpenRouter ids, and list-price costs."""

from __future__ import annotations

import pytest

from agent.model_table import (
    UNKNOWN_CONTEXT_LENGTH,
    ModelInfo,
    cost_usd,
    lookup_model,
)
from agent.types import Usage

MTOK = 1_000_000


@pytest.mark.parametrize(
    ("name", "price_in", "price_out", "min_cache"),
    [
        ("claude-opus-4-5", 5.0, 25.0, 4_096),
        ("claude-opus-4-5-20251101", 5.0, 25.0, 4_096),
        ("claude-opus-4-1-20250805", 15.0, 75.0, 1_024),
        ("claude-opus-4-20250514", 15.0, 75.0, 1_024),
        ("claude-opus-4-0", 15.0, 75.0, 1_024),
        ("claude-sonnet-4-5-20250929", 3.0, 15.0, 1_024),
        ("claude-sonnet-4-20250514", 3.0, 15.0, 1_024),
        ("claude-3-7-sonnet-latest", 3.0, 15.0, 1_024),
        ("claude-3-7-sonnet-20250219", 3.0, 15.0, 1_024),
        ("claude-haiku-4-5-20251001", 1.0, 5.0, 4_096),
        ("claude-3-5-haiku-latest", 0.80, 4.0, 2_048),
        ("claude-3-5-haiku-20241022", 0.80, 4.0, 2_048),
    ],
)
def test_native_claude_ids_match_with_dated_suffixes_and_aliases(
    name: str, price_in: float, price_out: float, min_cache: int
) -> None:
    info = lookup_model(name)
    assert (info.input_per_mtok, info.output_per_mtok) == (price_in, price_out)
    assert info.min_cacheable_tokens == min_cache
    assert info.context_length == 200_000
    assert info.family == "claude"
    assert info.known is True


def test_the_longest_matching_claude_prefix_wins_so_opus_4_5_is_not_priced_as_opus_4() -> None:
    assert lookup_model("claude-opus-4-5-20251101").input_per_mtok == 5.0
    assert lookup_model("claude-opus-4-20250514").input_per_mtok == 15.0


def test_a_claude_version_the_table_does_not_list_is_unknown_but_still_claude() -> None:
    # A version no price list knows (claude-opus-4-7 was this example until the price library
    # learnt it: see test_list_prices.py).
    info = lookup_model("claude-opus-9-9")
    assert info.known is False
    assert info.family == "claude"
    assert info.context_length == UNKNOWN_CONTEXT_LENGTH


def test_bedrock_style_claude_ids_are_recognised() -> None:
    info = lookup_model("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert info.known and info.input_per_mtok == 3.0


@pytest.mark.parametrize(
    ("name", "family", "context", "price_in"),
    [
        ("anthropic/claude-sonnet-4.5", "claude", 200_000, 3.0),
        ("anthropic/claude-opus-4.5", "claude", 200_000, 5.0),
        ("anthropic/claude-haiku-4.5", "claude", 200_000, 1.0),
        ("anthropic/claude-3.7-sonnet:thinking", "claude", 200_000, 3.0),
        ("openai/gpt-4o", "gpt", 128_000, 2.50),
        ("openai/gpt-4o-mini", "gpt", 128_000, 0.15),
        ("google/gemini-2.5-pro", "other", 1_048_576, 1.25),
        # Open-weight models: OpenRouter's price varies with the upstream host (None: priced).
        ("meta-llama/llama-3.3-70b-instruct", "other", 131_072, None),
        ("deepseek/deepseek-chat", "other", 163_840, None),
    ],
)
def test_openrouter_ids_have_their_own_entries(
    name: str, family: str, context: int, price_in: float | None
) -> None:
    info = lookup_model(name)
    assert info.known is True
    assert info.family == family
    assert info.context_length == context
    if price_in is None:
        assert info.input_per_mtok > 0
    else:
        assert info.input_per_mtok == price_in


def test_openrouter_claude_ids_share_the_native_minimum_cacheable_length() -> None:
    assert lookup_model("anthropic/claude-haiku-4.5").min_cacheable_tokens == 4_096
    assert lookup_model("anthropic/claude-sonnet-4.5").min_cacheable_tokens == 1_024


def test_lookup_ignores_case_and_keeps_the_requested_name_as_id() -> None:
    info = lookup_model("Claude-Sonnet-4-5")
    assert info.known and info.input_per_mtok == 3.0
    assert info.id == "Claude-Sonnet-4-5"


def test_unknown_models_get_128k_context_zero_prices_and_known_false() -> None:
    info = lookup_model("my-local-llama")
    assert info == ModelInfo(
        id="my-local-llama",
        context_length=128_000,
        input_per_mtok=0.0,
        output_per_mtok=0.0,
        min_cacheable_tokens=1_024,
        family="other",
        known=False,
        vision=False,  # an unknown local model may read no images: it gets placeholders
        reads_pdf=False,
    )


def test_context_length_override_replaces_the_table_value() -> None:
    assert (
        lookup_model("claude-sonnet-4-5", context_length_override=50_000).context_length == 50_000
    )
    assert lookup_model("qwen-local", context_length_override=32_768).context_length == 32_768


def test_a_non_positive_context_length_override_is_refused() -> None:
    with pytest.raises(ValueError):
        lookup_model("claude-sonnet-4-5", context_length_override=0)


SONNET = lookup_model("claude-sonnet-4-5")


def test_uncached_input_and_output_are_priced_at_list_price() -> None:
    usage = Usage(input_tokens=MTOK, output_tokens=MTOK)
    assert cost_usd(SONNET, usage) == pytest.approx(3.0 + 15.0)


def test_five_minute_cache_writes_cost_1_25x_and_reads_0_1x() -> None:
    assert cost_usd(SONNET, Usage(cache_write_tokens=MTOK)) == pytest.approx(3.75)
    assert cost_usd(SONNET, Usage(cache_read_tokens=MTOK)) == pytest.approx(0.30)


def test_the_reported_one_hour_part_of_cache_writes_costs_2x() -> None:
    usage = Usage(cache_write_tokens=3 * MTOK, cache_write_1h_tokens=MTOK)
    # 2M at 1.25x on the 5m tier plus 1M at 2x on the 1h tier, at $3 per million.
    assert cost_usd(SONNET, usage) == pytest.approx(3.0 * (2 * 1.25 + 2.0))


def test_writes_without_a_reported_split_follow_the_configured_ttl() -> None:
    usage = Usage(cache_write_tokens=MTOK)
    assert cost_usd(SONNET, usage, cache_ttl="1h") == pytest.approx(6.0)
    assert cost_usd(SONNET, usage, cache_ttl="5m") == pytest.approx(3.75)


def test_a_cached_call_costs_far_less_than_the_same_prompt_uncached() -> None:
    cached = Usage(input_tokens=2_000, cache_read_tokens=98_000, output_tokens=500)
    uncached = Usage(input_tokens=100_000, output_tokens=500)
    assert cached.prompt_tokens == uncached.prompt_tokens
    assert cost_usd(SONNET, cached) < 0.2 * cost_usd(SONNET, uncached)


def test_unknown_models_cost_nothing() -> None:
    assert cost_usd(lookup_model("local-model"), Usage(input_tokens=MTOK, output_tokens=MTOK)) == 0


def test_an_unsupported_cache_ttl_is_refused() -> None:
    with pytest.raises(ValueError):
        cost_usd(SONNET, Usage(input_tokens=1), cache_ttl="10m")
