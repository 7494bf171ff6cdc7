"""List prices per model: from the ``genai-prices`` library's bundled data, or an override.

``genai-prices`` (pydantic's price library) resolves a model reference and a provider to the
provider's current list prices: native Claude ids with their dated suffixes, OpenAI ids,
OpenRouter's ``vendor/model`` ids and many more. Only the data bundled in the installed package
is read: its ``UpdatePrices`` (a background fetch from GitHub) is never started here, so a
price changes when the dependency is upgraded, never while the daemon runs.

A model the library lacks is priced by the operator (``model.prices`` and its siblings in the
configuration: a :class:`ListPrice` whose ``source`` names the key), or not at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from genai_prices import Usage as _LibraryUsage
from genai_prices import calc_price
from genai_prices.types import ModelPrice, TieredPrices

CACHE_READ_MULTIPLIER = 0.1
"""A cache read costs this fraction of the input price (Anthropic's list price)."""
CACHE_WRITE_5M_MULTIPLIER = 1.25
"""A write on the 5-minute cache tier costs this multiple of the input price (Anthropic)."""
CACHE_WRITE_1H_MULTIPLIER = 2.0
"""A write on the 1-hour cache tier costs this multiple of the input price (Anthropic)."""
LIBRARY_SOURCE = "genai-prices"
"""``ListPrice.source`` of prices read from the library (an override's source is its key)."""

OPENROUTER = "openrouter"
ANTHROPIC = "anthropic"
# Bedrock ("us.anthropic.") and Vertex-style prefixes and a Bedrock "-v1:0" version: what a
# cloud adds around the native Claude id the library knows.
_CLOUD_PREFIX = re.compile(r"^(?:[a-z]+\.)?anthropic\.")
_CLOUD_VERSION = re.compile(r"-v\d+(?::\d+)?$")


@dataclass(frozen=True, slots=True)
class ListPrice:
    """One model's list prices: USD per million tokens, cache prices as input multiples."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_multiplier: float = CACHE_READ_MULTIPLIER
    cache_write_5m_multiplier: float = CACHE_WRITE_5M_MULTIPLIER
    cache_write_1h_multiplier: float = CACHE_WRITE_1H_MULTIPLIER
    source: str = LIBRARY_SOURCE
    """Where they come from: ``genai-prices``, or the configuration key of an override."""


@dataclass(frozen=True, slots=True)
class LibraryModel:
    """What the library knows of one model: its prices and (when it has one) its window."""

    price: ListPrice
    context_window: int | None


def library_model(name: str, canonical_claude_id: str | None = None) -> LibraryModel | None:
    """The library's entry for ``name``, None when it has no price for it.

    An id with a slash is an OpenRouter id (a ``:variant`` tag is ignored when the tagged id
    is not listed); ``canonical_claude_id`` (the table's native id of a Bedrock or Vertex
    name) is asked of Anthropic; any other name lets the library find its provider.
    """
    lowered = name.strip().lower()
    attempts: list[tuple[str, str | None]]
    if "/" in lowered:
        attempts = [(lowered, OPENROUTER), (lowered.split(":", 1)[0], OPENROUTER)]
    else:
        bare = _CLOUD_VERSION.sub("", _CLOUD_PREFIX.sub("", lowered)).replace("@", "-")
        attempts = [(lowered, None), (bare, ANTHROPIC)]
        if canonical_claude_id is not None:
            attempts.append((canonical_claude_id, ANTHROPIC))
    for ref, provider in attempts:
        try:
            found = calc_price(_LibraryUsage(), ref, provider_id=provider)
        except LookupError:
            continue
        price = _list_price(found.model_price)
        if price is not None:
            return LibraryModel(price, found.model.context_window)
    return None


def _list_price(prices: ModelPrice) -> ListPrice | None:
    """Our view of the library's prices; a tiered price counts at its base (first) tier."""
    input_price = _base(prices.input_mtok)
    output_price = _base(prices.output_mtok)
    if input_price is None or output_price is None:
        return None
    return ListPrice(
        input_per_mtok=float(input_price),
        output_per_mtok=float(output_price),
        cache_read_multiplier=_multiple(prices.cache_read_mtok, input_price, CACHE_READ_MULTIPLIER),
        cache_write_5m_multiplier=_multiple(
            prices.cache_write_mtok, input_price, CACHE_WRITE_5M_MULTIPLIER
        ),
        cache_write_1h_multiplier=_multiple(
            prices.cache_write_1h_mtok, input_price, CACHE_WRITE_1H_MULTIPLIER
        ),
    )


def _base(price: object) -> Decimal | None:
    if isinstance(price, TieredPrices):
        return price.base
    return price if isinstance(price, Decimal) else None


def _multiple(price: object, input_price: Decimal, default: float) -> float:
    """``price`` as a multiple of the input price; ``default`` when the library has none."""
    value = _base(price)
    if value is None or input_price <= 0:
        return default
    return float(value / input_price)
