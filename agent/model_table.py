"""What the agent knows about each model: context window, list prices, minimum cacheable prefix.

One table, so a price change or a new model is a one-line edit. Native Claude ids match with
their dated suffixes (``claude-sonnet-4-5-20250929``) and ``-latest`` aliases; OpenRouter ids
(``anthropic/claude-sonnet-4.5``) match exactly, ignoring a ``:variant`` tag. Anything else is an
unknown model with conservative defaults and zero prices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from agent.types import Usage

ModelFamily = Literal["claude", "gpt", "other"]

UNKNOWN_CONTEXT_LENGTH = 128_000
"""Context window assumed for a model the table does not know."""
DEFAULT_MIN_CACHEABLE_TOKENS = 1_024
"""Minimum cacheable prefix assumed when a model has no number of its own."""
CLAUDE_CONTEXT_LENGTH = 200_000
"""Standard Claude context window (the 1M tier needs a beta header and costs more)."""

TOKENS_PER_MTOK = 1_000_000
CACHE_WRITE_5M_MULTIPLIER = 1.25
CACHE_WRITE_1H_MULTIPLIER = 2.0
CACHE_READ_MULTIPLIER = 0.1
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
    vision: bool = True
    """Whether the model reads images (else it gets a placeholder naming each one)."""
    reads_pdf: bool = True
    """Whether PDFs can go to it as documents (Claude natively, GPT as file parts)."""


def _claude(id_: str, price_in: float, price_out: float, min_cache: int) -> ModelInfo:
    return ModelInfo(id_, CLAUDE_CONTEXT_LENGTH, price_in, price_out, min_cache, "claude", True)


# Native Anthropic ids, matched by prefix (see _NATIVE_SUFFIX). Minimum cacheable lengths:
# 1,024 for Sonnet and Opus up to 4.1, 2,048 for Haiku 3.x, 4,096 for Haiku 4.5 and Opus 4.5.
_CLAUDE_MODELS: dict[str, ModelInfo] = {
    m.id: m
    for m in (
        _claude("claude-opus-4-5", 5.0, 25.0, 4_096),
        _claude("claude-opus-4-1", 15.0, 75.0, 1_024),
        _claude("claude-opus-4", 15.0, 75.0, 1_024),
        _claude("claude-sonnet-4-5", 3.0, 15.0, 1_024),
        _claude("claude-sonnet-4", 3.0, 15.0, 1_024),
        _claude("claude-3-7-sonnet", 3.0, 15.0, 1_024),
        _claude("claude-3-5-sonnet", 3.0, 15.0, 1_024),
        _claude("claude-haiku-4-5", 1.0, 5.0, 4_096),
        _claude("claude-3-5-haiku", 0.80, 4.0, 2_048),
        _claude("claude-3-haiku", 0.25, 1.25, 2_048),
        _claude("claude-3-opus", 15.0, 75.0, 1_024),
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


def _other(
    id_: str,
    ctx: int,
    price_in: float,
    price_out: float,
    family: ModelFamily,
    *,
    vision: bool = True,
) -> ModelInfo:
    min_cache = DEFAULT_MIN_CACHEABLE_TOKENS
    reads_pdf = family == "gpt"
    return ModelInfo(id_, ctx, price_in, price_out, min_cache, family, True, vision, reads_pdf)


# Exact ids. OpenRouter prices of open-weight models vary by upstream host: these are typical.
_OTHER_MODELS: dict[str, ModelInfo] = {
    m.id: m
    for m in (
        _other("openai/gpt-4o", 128_000, 2.50, 10.0, "gpt"),
        _other("openai/gpt-4o-mini", 128_000, 0.15, 0.60, "gpt"),
        _other("openai/gpt-4.1", 1_047_576, 2.0, 8.0, "gpt"),
        _other("openai/gpt-4.1-mini", 1_047_576, 0.40, 1.60, "gpt"),
        _other("openai/gpt-5", 400_000, 1.25, 10.0, "gpt"),
        _other("openai/gpt-5-mini", 400_000, 0.25, 2.0, "gpt"),
        _other("gpt-4o", 128_000, 2.50, 10.0, "gpt"),
        _other("gpt-4o-mini", 128_000, 0.15, 0.60, "gpt"),
        _other("gpt-4.1", 1_047_576, 2.0, 8.0, "gpt"),
        _other("gpt-4.1-mini", 1_047_576, 0.40, 1.60, "gpt"),
        _other("gpt-5", 400_000, 1.25, 10.0, "gpt"),
        _other("gpt-5-mini", 400_000, 0.25, 2.0, "gpt"),
        _other("google/gemini-2.5-pro", 1_048_576, 1.25, 10.0, "other"),
        _other("google/gemini-2.5-flash", 1_048_576, 0.30, 2.50, "other"),
        _other("meta-llama/llama-3.3-70b-instruct", 131_072, 0.13, 0.40, "other", vision=False),
        _other("meta-llama/llama-3.1-8b-instruct", 131_072, 0.02, 0.05, "other", vision=False),
        _other("deepseek/deepseek-chat", 163_840, 0.30, 0.85, "other", vision=False),
        _other("mistralai/mistral-large", 128_000, 2.0, 6.0, "other", vision=False),
        _other("qwen/qwen-2.5-72b-instruct", 32_768, 0.12, 0.39, "other", vision=False),
    )
}

# What may follow a native Claude id: an "-0" alias, a date (or Vertex "@date"), "-latest",
# a Bedrock "-v1:0" version. Anything else (say "claude-opus-4-7") is a model we do not know.
_NATIVE_SUFFIX = re.compile(r"^(?:-0)?(?:[-@]\d{8})?(?:-latest)?(?:-v\d+(?::\d+)?)?$")
_PROVIDER_PREFIX = re.compile(r"^(?:[a-z]+\.)?anthropic\.")


def _match_claude(name: str) -> ModelInfo | None:
    """The native Claude entry whose id is the longest prefix of ``name`` with a valid suffix."""
    bare = _PROVIDER_PREFIX.sub("", name)
    best: ModelInfo | None = None
    for model_id, info in _CLAUDE_MODELS.items():
        if bare.startswith(model_id) and _NATIVE_SUFFIX.match(bare[len(model_id) :]):
            if best is None or len(model_id) > len(best.id):
                best = info
    return best


def guess_family(name: str) -> ModelFamily:
    """The family a model name suggests, for models the table does not know."""
    lowered = name.lower()
    if "claude" in lowered:
        return "claude"
    if lowered.startswith(("gpt", "openai/", "o1", "o3", "o4")):
        return "gpt"
    return "other"


def lookup_model(name: str, *, context_length_override: int | None = None) -> ModelInfo:
    """Facts about ``name``; unknown models get 128K context, zero prices and ``known=False``.

    ``context_length_override`` (from ``model.context_length`` in the config) replaces the
    table's context window, for self-hosted models or a provider that serves a smaller one.
    """
    lowered = name.strip().lower()
    without_variant = lowered.split(":", 1)[0] if "/" in lowered else lowered
    info: ModelInfo | None = None
    if without_variant in _OPENROUTER_CLAUDE_ALIASES:
        info = _CLAUDE_MODELS[_OPENROUTER_CLAUDE_ALIASES[without_variant]]
    elif without_variant in _OTHER_MODELS:
        info = _OTHER_MODELS[without_variant]
    else:
        info = _match_claude(lowered)
    if info is None:
        info = ModelInfo(
            id=name,
            context_length=UNKNOWN_CONTEXT_LENGTH,
            input_per_mtok=0.0,
            output_per_mtok=0.0,
            min_cacheable_tokens=DEFAULT_MIN_CACHEABLE_TOKENS,
            family=guess_family(name),
            known=False,
            # An unknown model reads images only when its name suggests a family that does.
            vision=guess_family(name) != "other",
            reads_pdf=guess_family(name) != "other",
        )
    else:
        info = replace(info, id=name)
    if context_length_override is not None:
        if context_length_override <= 0:
            raise ValueError(f"context length must be positive, got {context_length_override}")
        info = replace(info, context_length=context_length_override)
    return info


def models_of(provider: str, vendor: str | None = None) -> list[tuple[str, ModelInfo]]:
    """Every model the table knows on ``provider``: (the provider's name for it, its entry).

    ``anthropic`` offers the native Claude ids; ``openrouter`` its own ids, only those of
    ``vendor`` (the prefix before the slash) when given. Other providers: none known.
    """
    if provider == "anthropic":
        return list(_CLAUDE_MODELS.items())
    if provider != "openrouter":
        return []
    routed = [
        (alias, _CLAUDE_MODELS[model_id]) for alias, model_id in _OPENROUTER_CLAUDE_ALIASES.items()
    ]
    routed += [(name, info) for name, info in _OTHER_MODELS.items() if "/" in name]
    if vendor is None:
        return routed
    return [(name, info) for name, info in routed if name.split("/", 1)[0] == vendor]


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

    Cache writes cost 1.25x the input price on the 5-minute tier and 2x on the 1-hour tier. The
    1-hour part is ``usage.cache_write_1h_tokens`` when the provider reports it; when it does not
    (OpenRouter), every write is priced at the tier ``cache_ttl`` names.
    """
    writes_5m, writes_1h = writes_by_tier(usage, cache_ttl)
    input_units = (
        usage.input_tokens
        + writes_5m * CACHE_WRITE_5M_MULTIPLIER
        + writes_1h * CACHE_WRITE_1H_MULTIPLIER
        + usage.cache_read_tokens * CACHE_READ_MULTIPLIER
    )
    return (
        input_units * info.input_per_mtok + usage.output_tokens * info.output_per_mtok
    ) / TOKENS_PER_MTOK
