"""Auto-detection of the summary model: the provider's cheapest current model with a window at
least the main model's; an explicit model always wins."""

from __future__ import annotations

import pytest

from agent.compressor.summary_model import choose_summary_model


@pytest.mark.parametrize(
    ("main", "provider", "expected"),
    [
        ("claude-sonnet-4-5", "anthropic", "claude-haiku-4-5"),
        ("claude-opus-4-5-20251101", "anthropic", "claude-haiku-4-5"),
        ("anthropic/claude-sonnet-4.5", "openrouter", "anthropic/claude-haiku-4.5"),
        ("anthropic/claude-opus-4.5", "openrouter", "anthropic/claude-haiku-4.5"),
        ("openai/gpt-5", "openrouter", "openai/gpt-5-mini"),
    ],
)
def test_auto_detect_picks_the_cheapest_current_model_of_the_same_provider(
    main: str, provider: str, expected: str
) -> None:
    choice = choose_summary_model(None, main, provider)
    assert choice.name == expected
    assert choice.auto
    assert "auto-detected" in choice.status_line and expected in choice.status_line


def test_the_cheapest_model_summarises_with_itself() -> None:
    assert choose_summary_model(None, "claude-haiku-4-5", "anthropic").name == "claude-haiku-4-5"


def test_a_cheaper_model_with_a_smaller_window_is_not_chosen() -> None:
    # gpt-5-mini (400K) is cheaper than gpt-4.1, but its window is smaller than gpt-4.1's 1M.
    assert choose_summary_model(None, "openai/gpt-4.1", "openrouter").name == "openai/gpt-4.1-mini"


def test_unknown_models_and_unknown_servers_keep_the_main_model() -> None:
    assert choose_summary_model(None, "my-local-llama", "anthropic").name == "my-local-llama"
    assert choose_summary_model(None, "claude-sonnet-4-5", "openai_compat").name == (
        "claude-sonnet-4-5"
    )


def test_an_explicit_model_overrides_auto_detection() -> None:
    choice = choose_summary_model("claude-sonnet-4-5", "claude-sonnet-4-5", "anthropic")
    assert choice.name == "claude-sonnet-4-5"
    assert not choice.auto
    assert "configured" in choice.status_line
