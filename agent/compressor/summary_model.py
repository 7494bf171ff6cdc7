"""Which model writes compaction summaries when the configuration does not name one.

A summary is a long input (the middle of the conversation, the previous summary) and a short
output, so its price is mostly input tokens. The main model is often the most expensive model a
provider offers; the same provider's cheapest current model with a context window at least the
main model's writes the summary for a fraction of the price (Claude Sonnet or Opus on Anthropic
or OpenRouter: claude-haiku-4-5, a third of Sonnet's price). An explicit
``auxiliary.compression.model`` always wins; a provider whose models we cannot know
(``openai_compat``) or a model the table does not know keeps the main model.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.model_table import ModelInfo, lookup_model, models_of

LEGACY_MODELS = frozenset(
    {
        "claude-3-haiku",
        "claude-3-5-haiku",
        "claude-3-opus",
        "claude-3-5-sonnet",
        "claude-3-7-sonnet",
        "claude-opus-4",
        "claude-opus-4-1",
        "claude-sonnet-4",
    }
)
"""Table ids never chosen automatically: older generations summarise worse."""
AUTO_DETECT_PROVIDERS = ("anthropic", "openrouter")
"""Providers whose model list the table knows; elsewhere the main model writes summaries."""


@dataclass(frozen=True, slots=True)
class SummaryModelChoice:
    """The summary model and how it was chosen (for ``/status`` and ``hermes doctor``)."""

    name: str
    auto: bool
    """True when auto-detected (``auxiliary.compression.model: null``)."""
    reason: str

    @property
    def status_line(self) -> str:
        """One line for ``/status`` and ``hermes doctor``."""
        how = "auto-detected" if self.auto else "configured"
        return f"Summary model: {self.name} ({how}: {self.reason})"


def choose_summary_model(
    configured: str | None, main: str, provider: str, *, main_context_length: int | None = None
) -> SummaryModelChoice:
    """The configured summary model, else the cheapest suitable one of the main provider.

    Suitable: a current model of the same provider (on OpenRouter, the same vendor) whose
    context window is at least the main model's (``main_context_length`` when the config
    overrides the table's), so a summary never needs a smaller chunk than the main model.
    """
    if configured:
        return SummaryModelChoice(configured, False, "auxiliary.compression.model")
    main_info = lookup_model(main, context_length_override=main_context_length)
    if provider not in AUTO_DETECT_PROVIDERS or not main_info.known:
        return SummaryModelChoice(main, True, "the main model; no cheaper model known here")
    candidates = [
        (name, info)
        for name, info in models_of(provider, vendor_of(main))
        if info.id not in LEGACY_MODELS and info.context_length >= main_info.context_length
    ]
    best = min(candidates, key=lambda candidate: _price(candidate[1]), default=None)
    if best is None or _price(best[1]) >= _price(main_info):
        return SummaryModelChoice(main, True, "the main model is the cheapest suitable one")
    return SummaryModelChoice(
        best[0],
        True,
        f"cheapest {provider} model with a window >= {main_info.context_length:,} tokens",
    )


def vendor_of(name: str) -> str | None:
    """The vendor prefix of an OpenRouter id (``anthropic`` of ``anthropic/claude-...``)."""
    return name.split("/", 1)[0].lower() if "/" in name else None


def _price(info: ModelInfo) -> tuple[float, float]:
    # Summaries are mostly input: order by input price, then output price.
    return (info.input_per_mtok, info.output_per_mtok)
