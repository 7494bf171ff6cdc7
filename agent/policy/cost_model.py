"""What a session's next visit will cost: prompt-cache prices and the shape of a visit.

Pure functions over a model's list prices (:class:`agent.model_table.ModelInfo`). A *visit* is
a run of turns less than the cache TTL apart: its first turn finds the cache cold (after a gap
longer than the TTL) and writes the whole prompt at the cache-write price, each later turn
reads what the previous turn wrote (0.1x) and writes only what was added. Output tokens cost
the same whatever the context policy does, so they are left out of the comparisons here.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.model_table import TOKENS_PER_MTOK, ModelInfo

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
"""How long a cache entry lives after its last use, per TTL tier."""
DEFAULT_TURN_GROWTH_TOKENS = 400
"""Tokens a turn adds to the prompt (a user message and a reply) before the session shows its
own: the same in both prompts a decision compares, so it only matters near the cache minimum."""


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per token for one model and cache tier, and its minimum cacheable prefix."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    min_cacheable_tokens: int

    @classmethod
    def of(cls, info: ModelInfo, ttl: str = "5m") -> Prices:
        """The prices of ``info`` with cache writes on the ``ttl`` tier ("5m" or "1h")."""
        if ttl not in TTL_SECONDS:
            raise ValueError(f"ttl must be one of {tuple(TTL_SECONDS)}, got {ttl!r}")
        per_token = info.input_per_mtok / TOKENS_PER_MTOK
        write = info.cache_write_1h_multiplier if ttl == "1h" else info.cache_write_5m_multiplier
        return cls(
            input=per_token,
            output=info.output_per_mtok / TOKENS_PER_MTOK,
            cache_write=per_token * write,
            cache_read=per_token * info.cache_read_multiplier,
            min_cacheable_tokens=info.min_cacheable_tokens,
        )

    def request_cost(self, input_tokens: int, output_tokens: int) -> float:
        """An uncached request (a summary): input and output at list prices."""
        return input_tokens * self.input + output_tokens * self.output


def turn_cost(prices: Prices, prompt_tokens: float, cached_tokens: float) -> float:
    """One turn's prompt: ``cached_tokens`` read from the cache, the rest written to it.

    A prompt under the model's minimum cacheable length is not cached at all: all of it is
    uncached input.
    """
    if prompt_tokens < prices.min_cacheable_tokens:
        return prompt_tokens * prices.input
    cached = min(cached_tokens, prompt_tokens)
    return cached * prices.cache_read + (prompt_tokens - cached) * prices.cache_write


def expected_visit_cost(
    prices: Prices,
    prompt_tokens: float,
    *,
    cache_warm: bool,
    expected_turns: float,
    growth_tokens: float = DEFAULT_TURN_GROWTH_TOKENS,
    warm_tokens: float | None = None,
) -> float:
    """The prompt cost of a visit of ``expected_turns`` turns starting at ``prompt_tokens``.

    A cold cache writes the whole first prompt; a warm one reads ``warm_tokens`` of it (default:
    all but the newest turn's growth). Each later turn reads the previous prompt and writes the
    ``growth_tokens`` it adds. A fractional number of turns counts its last turn partly.
    """
    if expected_turns <= 0:
        return 0.0
    if cache_warm:
        cached = prompt_tokens - growth_tokens if warm_tokens is None else warm_tokens
    else:
        cached = 0.0
    total = turn_cost(prices, prompt_tokens, cached)
    remaining = expected_turns - 1
    prompt = prompt_tokens
    while remaining > 0:
        share = min(1.0, remaining)
        total += share * turn_cost(prices, prompt + growth_tokens, prompt)
        prompt += growth_tokens
        remaining -= 1
    return total
