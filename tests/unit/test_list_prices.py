"""List prices: the genai-prices data for the models it knows, the operator's override for the
rest, and a model with neither flagged rather than silently free."""

from __future__ import annotations

import logging

import pytest

from agent.list_prices import LIBRARY_SOURCE, ListPrice, library_model
from agent.model_table import cost_usd, lookup_model, pricing_for_call
from agent.policy.cost_model import Prices
from agent.types import Usage
from gateway.config.prices import chat_model_info, check_prices, summary_model_info
from gateway.config.schema import ConfigError, parse_config

MTOK = 1_000_000
LOCAL = "my-local-llama"
"""A model no price list knows (a self-hosted server)."""
LOCAL_PRICES = {"input_per_mtok": 0.5, "output_per_mtok": 1.5}


def test_a_claude_model_is_priced_from_the_library_with_its_cache_prices() -> None:
    info = lookup_model("claude-haiku-4-5")
    assert info.known and info.price_source == LIBRARY_SOURCE
    assert (info.input_per_mtok, info.output_per_mtok) == (1.0, 5.0)
    assert info.cache_read_multiplier == pytest.approx(0.1)
    assert info.cache_write_5m_multiplier == pytest.approx(1.25)
    assert info.cache_write_1h_multiplier == pytest.approx(2.0)


def test_a_dated_claude_id_is_priced_as_its_model() -> None:
    dated = lookup_model("claude-sonnet-4-5-20250929")
    assert dated.known and (dated.input_per_mtok, dated.output_per_mtok) == (3.0, 15.0)
    assert dated.id == "claude-sonnet-4-5-20250929"


def test_an_openrouter_id_is_priced_at_openrouters_price() -> None:
    info = lookup_model("openai/gpt-4o-mini")
    assert info.known and (info.input_per_mtok, info.output_per_mtok) == (0.15, 0.60)
    # OpenAI's cache reads cost half the input price, not Anthropic's tenth.
    assert info.cache_read_multiplier == pytest.approx(0.5)


def test_a_claude_release_the_table_does_not_list_is_priced_by_the_library() -> None:
    info = lookup_model("claude-opus-4-7")
    assert info.known and info.input_per_mtok > 0
    assert info.family == "claude"
    assert info.context_length == 200_000  # the standard window, not the 1M beta tier


def test_a_bedrock_id_is_priced_as_the_native_claude_model() -> None:
    assert library_model("us.anthropic.claude-sonnet-4-5-20250929-v1:0") is not None
    assert lookup_model("us.anthropic.claude-sonnet-4-5-20250929-v1:0").input_per_mtok == 3.0


def test_a_model_no_price_list_knows_is_flagged_and_costs_nothing() -> None:
    info = lookup_model(LOCAL)
    assert info.known is False
    assert info.price_source is None
    assert cost_usd(info, Usage(input_tokens=MTOK, output_tokens=MTOK)) == 0


def test_an_override_prices_an_unknown_model_including_its_cache() -> None:
    price = ListPrice(0.5, 1.5, cache_read_multiplier=0.2, source="model.prices")
    info = lookup_model(LOCAL, price=price)
    assert info.known and info.priced_by_override and info.price_source == "model.prices"
    usage = Usage(input_tokens=MTOK, cache_read_tokens=MTOK, output_tokens=MTOK)
    assert cost_usd(info, usage) == pytest.approx(0.5 + 0.5 * 0.2 + 1.5)
    assert Prices.of(info, "1h").cache_write == pytest.approx(0.5 * 2.0 / MTOK)


def test_an_override_replaces_the_librarys_price() -> None:
    info = lookup_model("claude-sonnet-4-5", price=ListPrice(1.0, 2.0, source="model.prices"))
    assert (info.input_per_mtok, info.output_per_mtok) == (1.0, 2.0)
    assert info.min_cacheable_tokens == 1_024  # the table's facts stay


def test_a_call_reported_under_another_id_keeps_the_operators_override() -> None:
    overridden = lookup_model(LOCAL, price=ListPrice(0.5, 1.5, source="model.prices"))
    assert pricing_for_call("claude-haiku-4-5", overridden) is overridden
    library_priced = lookup_model("claude-sonnet-4-5")
    assert pricing_for_call("claude-haiku-4-5", library_priced).input_per_mtok == 1.0
    assert pricing_for_call(LOCAL, library_priced) is library_priced


def test_configured_overrides_reach_the_main_model_each_choice_and_the_summary_model() -> None:
    config = parse_config(
        {
            "model": {
                "name": LOCAL,
                "prices": LOCAL_PRICES,
                "choices": [
                    {"name": "other-local", "prices": {"input_per_mtok": 2, "output_per_mtok": 4}}
                ],
            },
            "auxiliary": {"compression": {"model": "tiny-local", "prices": LOCAL_PRICES}},
        }
    )
    assert chat_model_info(config, LOCAL).price_source == "model.prices"
    assert chat_model_info(config, "other-local").price_source == "model.choices.0.prices"
    assert chat_model_info(config, "other-local").input_per_mtok == 2.0
    summary = summary_model_info(config, "tiny-local")
    assert summary.price_source == "auxiliary.compression.prices"


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        (
            {"input_per_mtok": -1, "output_per_mtok": 1},
            "model.prices.input_per_mtok: must be greater than or equal to 0 (got -1)",
        ),
        (
            {"input_per_mtok": "cheap", "output_per_mtok": 1},
            "model.prices.input_per_mtok: must be a valid number (got 'cheap')",
        ),
        (
            {"input_per_mtok": True, "output_per_mtok": 1},
            "model.prices.input_per_mtok: must be a valid number (got True)",
        ),
        (
            {"input_per_mtok": 1},
            "model.prices.output_per_mtok: missing (this key is required)",
        ),
        (
            {"input_per_mtok": 1, "output_per_mtok": 1, "cache_read": 0.1},
            "model.prices.cache_read: unknown key (did you mean 'cache_read_multiplier'?)",
        ),
        (
            {"input_per_mtok": 1, "output_per_mtok": 1, "cache_write_1h_multiplier": -2},
            "model.prices.cache_write_1h_multiplier: must be greater than or equal to 0 (got -2)",
        ),
    ],
)
def test_bad_prices_are_errors_naming_the_key(prices: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"model": {"prices": prices}})
    assert str(info.value) == message


def test_bad_prices_of_a_choice_or_the_summary_model_name_their_key() -> None:
    with pytest.raises(ConfigError, match=r"^model\.choices\.0\.prices\.output_per_mtok: "):
        parse_config({"model": {"choices": [{"name": "x", "prices": {"input_per_mtok": 1}}]}})
    with pytest.raises(ConfigError, match=r"^auxiliary\.compression\.prices\.input_per_mtok: "):
        parse_config({"auxiliary": {"compression": {"prices": {"output_per_mtok": 1}}}})


def test_an_unpriced_model_without_limits_is_a_warning_naming_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = parse_config({"model": {"name": LOCAL}})
    with caplog.at_level(logging.WARNING, logger="gateway.config.prices"):
        check_prices(config, LOCAL)
    [warning] = caplog.messages
    assert f"no known price for model '{LOCAL}'; set model.prices" in warning


@pytest.mark.parametrize(
    ("sections", "key"),
    [
        ({"model": {"name": LOCAL}}, "model.prices"),
        (
            {"model": {"choices": [{"name": "claude-haiku-4-5"}, {"name": LOCAL}]}},
            "model.choices.1.prices",
        ),
        ({"auxiliary": {"compression": {"model": LOCAL}}}, "auxiliary.compression.prices"),
    ],
)
def test_a_limit_with_an_unpriced_model_is_refused_naming_the_key(
    sections: dict[str, dict[str, object]], key: str
) -> None:
    config = parse_config({**sections, "limits": {"monthly_usd_total": 20}})
    summary = config.auxiliary.compression.model or config.model.name
    with pytest.raises(ConfigError) as info:
        check_prices(config, summary)
    assert f"no known price for model '{LOCAL}'; set {key}" in str(info.value)
    assert "limits.monthly_usd_total" in str(info.value)


def test_a_limit_with_every_model_priced_is_accepted() -> None:
    config = parse_config(
        {"model": {"name": LOCAL, "prices": LOCAL_PRICES}, "limits": {"daily_usd_per_user": 1}}
    )
    check_prices(config, LOCAL)
