"""What the agent knows about each model: context window, list prices, minimum cacheable prefix.

List prices come from the ``genai-prices`` library (:mod:`agent.list_prices`) or an operator's
override; this table keeps only what the library lacks: minimum cacheable lengths, whether a
model reads images and PDFs, and context windows. Native Claude ids match with their dated
suffixes (``claude-sonnet-4-5-20250929``) and ``-latest`` aliases; OpenRouter ids
(``anthropic/claude-sonnet-4.5``) match exactly, ignoring a ``:variant`` tag. A model with no
known price (a local server, a model newer than the installed library) has ``known=False`` and
zero prices: the gateway warns about it, and refuses to start when a spending limit needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from agent.list_prices import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
    LIBRARY_SOURCE,
    ListPrice,
    library_model,
)
from agent.types import Usage

__all__ = [
    "CACHE_READ_MULTIPLIER",
    "CACHE_TTLS",
    "CACHE_WRITE_1H_MULTIPLIER",
    "CACHE_WRITE_5M_MULTIPLIER",
    "TOKENS_PER_MTOK",
    "UNKNOWN_CONTEXT_LENGTH",
    "ListPrice",
    "ModelFamily",
    "ModelInfo",
    "cost_usd",
    "guess_family",
    "lookup_model",
    "models_of",
    "pricing_for_call",
    "writes_by_tier",
]

ModelFamily = Literal["claude", "gpt", "other"]

UNKNOWN_CONTEXT_LENGTH = 128_000
"""Context window assumed for a model the table does not know."""
DEFAULT_MIN_CACHEABLE_TOKENS = 1_024
"""Minimum cacheable prefix assumed when a model has no number of its own."""
CLAUDE_CONTEXT_LENGTH = 200_000
"""Standard Claude context window (the 1M tier needs a beta header and costs more), also for
a Claude model the price library knows and this table does not yet."""

TOKENS_PER_MTOK = 1_000_000
CACHE_TTLS = ("5m", "1h")


@dataclass(frozen=True)
class ModelInfo:
    """Facts about one model; prices are USD per million tokens (input price is uncached)."""

    id: str
    context_length: int
    input_per_mtok: float
    output_per_mtok: float
    min_cacheable_tokens: int
    family: ModelFamily
    known: bool
    """Whether the model's list prices are known (from the library or an override); an
    unknown model costs nothing, so spending limits cannot count it."""
    vision: bool = True
    """Whether the model reads images (else it gets a placeholder naming each one)."""
    reads_pdf: bool = True
    """Whether PDFs can go to it as documents (Claude natively, GPT as file parts)."""
    cache_read_multiplier: float = CACHE_READ_MULTIPLIER
    """A cache read's price as a multiple of the input price."""
    cache_write_5m_multiplier: float = CACHE_WRITE_5M_MULTIPLIER
    """A 5-minute-tier cache write's price as a multiple of the input price."""
    cache_write_1h_multiplier: float = CACHE_WRITE_1H_MULTIPLIER
    """A 1-hour-tier cache write's price as a multiple of the input price."""
    price_source: str | None = None
    """``genai-prices``, the configuration key of an override, or None (no known price)."""

    @property
    def priced_by_override(self) -> bool:
        """Whether the prices are the operator's (they then win over any library price)."""
        return self.price_source not in (None, LIBRARY_SOURCE)

    def with_price(self, price: ListPrice) -> ModelInfo:
        """This model priced at ``price``."""
        return replace(
            self,
            input_per_mtok=price.input_per_mtok,
            output_per_mtok=price.output_per_mtok,
            cache_read_multiplier=price.cache_read_multiplier,
            cache_write_5m_multiplier=price.cache_write_5m_multiplier,
            cache_write_1h_multiplier=price.cache_write_1h_multiplier,
            price_source=price.source,
            known=True,
        )


@dataclass(frozen=True, slots=True)
class _Entry:
    """What the table keeps of a model: everything but its prices."""

    id: str
    context_length: int
    min_cacheable_tokens: int
    family: ModelFamily
    vision: bool = True
    reads_pdf: bool = True


def _claude(id_: str, min_cache: int) -> _Entry:
    return _Entry(id_, CLAUDE_CONTEXT_LENGTH, min_cache, "claude")


# Native Anthropic ids, matched by prefix (see _NATIVE_SUFFIX). Minimum cacheable lengths:
# 1,024 for Sonnet and Opus up to 4.1, 2,048 for Haiku 3.x, 4,096 for Haiku 4.5 and Opus 4.5.
_CLAUDE_MODELS: dict[str, _Entry] = {
    m.id: m
    for m in (
        _claude("claude-opus-4-5", 4_096),
        _claude("claude-opus-4-1", 1_024),
        _claude("claude-opus-4", 1_024),
        _claude("claude-sonnet-4-5", 1_024),
        _claude("claude-sonnet-4", 1_024),
        _claude("claude-3-7-sonnet", 1_024),
        _claude("claude-3-5-sonnet", 1_024),
        _claude("claude-haiku-4-5", 4_096),
        _claude("claude-3-5-haiku", 2_048),
        _claude("claude-3-haiku", 2_048),
        _claude("claude-3-opus", 1_024),
    )
}

# OpenRouter's names for the same Claude models.
_OPENROUTER_CLAUDE_ALIASES: dict[str, str] = {
    "anthropic/claude-opus-4.5": "claude-opus-4-5",
    "anthropic/claude-opus-4.1": "claude-opus-4-1",
    "anthropic/claude-opus-4": "claude-opus-4",
    "anthropic/claude-sonnet-4.5": "claude-sonnet-4-5",
    "anthropic/claude-sonnet-4": "claude-sonnet-4",
    "anthropic/claude-3.7-sonnet": "claude-3-7-sonnet",
    "anthropic/claude-3.5-sonnet": "claude-3-5-sonnet",
    "anthropic/claude-haiku-4.5": "claude-haiku-4-5",
    "anthropic/claude-3.5-haiku": "claude-3-5-haiku",
    "anthropic/claude-3-haiku": "claude-3-haiku",
    "anthropic/claude-3-opus": "claude-3-opus",
}


def _other(id_: str, ctx: int, family: ModelFamily, *, vision: bool = True) -> _Entry:
    return _Entry(id_, ctx, DEFAULT_MIN_CACHEABLE_TOKENS, family, vision, family == "gpt")


# Exact ids, for their context windows (the library lacks some) and whether they read images.
_OTHER_MODELS: dict[str, _Entry] = {
    m.id: m
    for m in (
        _other("openai/gpt-4o", 128_000, "gpt"),
        _other("openai/gpt-4o-mini", 128_000, "gpt"),
        _other("openai/gpt-4.1", 1_047_576, "gpt"),
        _other("openai/gpt-4.1-mini", 1_047_576, "gpt"),
        _other("openai/gpt-5", 400_000, "gpt"),
        _other("openai/gpt-5-mini", 400_000, "gpt"),
        _other("gpt-4o", 128_000, "gpt"),
        _other("gpt-4o-mini", 128_000, "gpt"),
        _other("gpt-4.1", 1_047_576, "gpt"),
        _other("gpt-4.1-mini", 1_047_576, "gpt"),
        _other("gpt-5", 400_000, "gpt"),
        _other("gpt-5-mini", 400_000, "gpt"),
        _other("google/gemini-2.5-pro", 1_048_576, "other"),
        _other("google/gemini-2.5-flash", 1_048_576, "other"),
        _other("meta-llama/llama-3.3-70b-instruct", 131_072, "other", vision=False),
        _other("meta-llama/llama-3.1-8b-instruct", 131_072, "other", vision=False),
        _other("deepseek/deepseek-chat", 163_840, "other", vision=False),
        _other("mistralai/mistral-large", 128_000, "other", vision=False),
        _other("qwen/qwen-2.5-72b-instruct", 32_768, "other", vision=False),
    )
}

# What may follow a native Claude id: an "-0" alias, a date (or Vertex "@date"), "-latest",
# a Bedrock "-v1:0" version. Anything else (say "claude-opus-4-7") is not in this table (the
# price library may still know it).
_NATIVE_SUFFIX = re.compile(r"^(?:-0)?(?:[-@]\d{8})?(?:-latest)?(?:-v\d+(?::\d+)?)?$")
_PROVIDER_PREFIX = re.compile(r"^(?:[a-z]+\.)?anthropic\.")


def _match_claude(name: str) -> _Entry | None:
    """The native Claude entry whose id is the longest prefix of ``name`` with a valid suffix."""
    bare = _PROVIDER_PREFIX.sub("", name)
    best: _Entry | None = None
    for model_id, entry in _CLAUDE_MODELS.items():
        if bare.startswith(model_id) and _NATIVE_SUFFIX.match(bare[len(model_id) :]):
            if best is None or len(model_id) > len(best.id):
                best = entry
    return best


def _table_entry(lowered: str) -> _Entry | None:
    without_variant = lowered.split(":", 1)[0] if "/" in lowered else lowered
    if without_variant in _OPENROUTER_CLAUDE_ALIASES:
        return _CLAUDE_MODELS[_OPENROUTER_CLAUDE_ALIASES[without_variant]]
    if without_variant in _OTHER_MODELS:
        return _OTHER_MODELS[without_variant]
    return _match_claude(lowered)


def guess_family(name: str) -> ModelFamily:
    """The family a model name suggests, for models the table does not know."""
    lowered = name.lower()
    if "claude" in lowered:
        return "claude"
    if lowered.startswith(("gpt", "openai/", "o1", "o3", "o4")):
        return "gpt"
    return "other"


def _unpriced(name: str, entry: _Entry | None, library_window: int | None) -> ModelInfo:
    """``name`` with the table's facts (else conservative guesses) and no prices yet."""
    if entry is not None:
        return ModelInfo(
            id=name,
            context_length=entry.context_length,
            input_per_mtok=0.0,
            output_per_mtok=0.0,
            min_cacheable_tokens=entry.min_cacheable_tokens,
            family=entry.family,
            known=False,
            vision=entry.vision,
            reads_pdf=entry.reads_pdf,
        )
    family = guess_family(name)
    if library_window is None:
        context_length = UNKNOWN_CONTEXT_LENGTH
    else:
        context_length = CLAUDE_CONTEXT_LENGTH if family == "claude" else library_window
    return ModelInfo(
        id=name,
        context_length=context_length,
        input_per_mtok=0.0,
        output_per_mtok=0.0,
        min_cacheable_tokens=DEFAULT_MIN_CACHEABLE_TOKENS,
        family=family,
        known=False,
        # A model the table does not list reads images only when its name suggests a family
        # that does.
        vision=family != "other",
        reads_pdf=family != "other",
    )


def lookup_model(
    name: str, *, context_length_override: int | None = None, price: ListPrice | None = None
) -> ModelInfo:
    """Facts about ``name``; a model with no known price has zero prices and ``known=False``.

    Prices: ``price`` (an operator's override, from the configuration) when given, else the
    ``genai-prices`` library's. ``context_length_override`` (``model.context_length`` in the
    config) replaces the context window, for self-hosted models or a provider that serves a
    smaller one; the window is otherwise the table's, else the library's (a Claude model's
    standard 200K), else 128K. Raises ValueError for a non-positive override.
    """
    lowered = name.strip().lower()
    entry = _table_entry(lowered)
    found = library_model(name, entry.id if entry and entry.family == "claude" else None)
    info = _unpriced(name, entry, found.context_window if found else None)
    if price is not None:
        info = info.with_price(price)
    elif found is not None:
        info = info.with_price(found.price)
    if context_length_override is not None:
        if context_length_override <= 0:
            raise ValueError(f"context length must be positive, got {context_length_override}")
        info = replace(info, context_length=context_length_override)
    return info


def pricing_for_call(reported: str | None, configured: ModelInfo) -> ModelInfo:
    """The entry a call to ``configured`` is priced at, given the model the API reports.

    The operator's override always wins; otherwise a reported model the library prices (a
    provider serving a dated id, or another model than asked) is priced as itself; else the
    configured model's prices apply.
    """
    if not reported or reported == configured.id or configured.priced_by_override:
        return configured
    info = lookup_model(reported)
    return info if info.known else configured


def models_of(provider: str, vendor: str | None = None) -> list[tuple[str, ModelInfo]]:
    """Every model the table knows on ``provider``: (the provider's name for it, its facts,
    under the table's id).

    ``anthropic`` offers the native Claude ids; ``openrouter`` its own ids, only those of
    ``vendor`` (the prefix before the slash) when given. Other providers: none known.
    """
    if provider == "anthropic":
        names = list(_CLAUDE_MODELS)
    elif provider == "openrouter":
        names = [*_OPENROUTER_CLAUDE_ALIASES, *(n for n in _OTHER_MODELS if "/" in n)]
        if vendor is not None:
            names = [name for name in names if name.split("/", 1)[0] == vendor]
    else:
        return []
    # Each entry keeps the table's id (an OpenRouter Claude alias: the native id).
    return [(name, replace(lookup_model(name), id=_table_id(name))) for name in names]


def _table_id(name: str) -> str:
    return _OPENROUTER_CLAUDE_ALIASES.get(name, name)


def writes_by_tier(usage: Usage, cache_ttl: str = "5m") -> tuple[int, int]:
    """A call's cache writes as priced: (5-minute tier, 1-hour tier).

    The 1-hour part is ``usage.cache_write_1h_tokens`` when the provider reports it; when it
    does not (OpenRouter), every write is on the tier ``cache_ttl`` names.
    """
    if cache_ttl not in CACHE_TTLS:
        raise ValueError(f"cache_ttl must be one of {CACHE_TTLS}, got {cache_ttl!r}")
    writes = usage.cache_write_tokens
    if usage.cache_write_1h_tokens > 0:
        writes_1h = min(usage.cache_write_1h_tokens, writes)
    else:
        writes_1h = writes if cache_ttl == "1h" else 0
    return writes - writes_1h, writes_1h


def cost_usd(info: ModelInfo, usage: Usage, cache_ttl: str = "5m") -> float:
    """The list-price cost of one call: uncached input, cache writes and reads, output.

    Cache writes and reads cost the model's multiples of the input price (Anthropic: 1.25x on
    the 5-minute tier, 2x on the 1-hour tier, 0.1x for a read). The 1-hour part is
    ``usage.cache_write_1h_tokens`` when the provider reports it; when it does not
    (OpenRouter), every write is priced at the tier ``cache_ttl`` names.
    """
    writes_5m, writes_1h = writes_by_tier(usage, cache_ttl)
    input_units = (
        usage.input_tokens
        + writes_5m * info.cache_write_5m_multiplier
        + writes_1h * info.cache_write_1h_multiplier
        + usage.cache_read_tokens * info.cache_read_multiplier
    )
    return (
        input_units * info.input_per_mtok + usage.output_tokens * info.output_per_mtok
    ) / TOKENS_PER_MTOK
