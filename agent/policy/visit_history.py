"""A session's visits, learned from its message times: turns per visit and the TTL to cache with.

A *visit* is a run of messages less than the cache TTL apart (the cache stays warm within it);
the first message after a longer gap starts a new one and finds the cache cold. Pure functions
over platform times (epoch seconds), so a replay decides as the live run did.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from agent.model_table import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
)
from agent.policy.cost_model import TTL_SECONDS

PRIOR_TURNS_PER_VISIT = 8.0
"""Turns expected in a visit before the session has history of its own."""
PRIOR_WEIGHT_VISITS = 2.0
"""How many visits' worth of evidence the prior counts for."""
MIN_GAPS_FOR_TTL = 12
"""Below this many observed gaps ``choose_ttl`` keeps the 5-minute tier."""
RECENT_GAPS = 200
"""``choose_ttl`` looks at this many most recent gaps: habits change."""
TTL_SWITCH_MARGIN = 0.10
"""The 1-hour tier must be at least this much cheaper to be chosen (it doubles every write)."""
GROWTH_SHARE = 0.05
"""Share of the prompt a turn adds (written at the tier's price on every turn)."""


def visit_lengths(times: Sequence[float], ttl_seconds: float) -> list[int]:
    """Turns per visit for message ``times`` (sorted here): a gap over the TTL starts a visit."""
    ordered = sorted(times)
    if not ordered:
        return []
    lengths = [1]
    for earlier, later in itertools.pairwise(ordered):
        if later - earlier > ttl_seconds:
            lengths.append(1)
        else:
            lengths[-1] += 1
    return lengths


def expected_turns_per_visit(
    times: Sequence[float],
    ttl_seconds: float,
    *,
    prior_turns: float = PRIOR_TURNS_PER_VISIT,
    prior_weight: float = PRIOR_WEIGHT_VISITS,
) -> float:
    """The mean visit length of the session's finished visits, shrunk towards the prior.

    ``times`` are the user messages before the one that starts the new visit, so every visit
    they form is finished. With no history the prior itself.
    """
    lengths = visit_lengths(times, ttl_seconds)
    return (prior_turns * prior_weight + sum(lengths)) / (prior_weight + len(lengths))


def gaps_between(times: Sequence[float]) -> list[float]:
    """The gaps between consecutive message times, oldest first."""
    ordered = sorted(times)
    return [later - earlier for earlier, later in itertools.pairwise(ordered)]


def relative_cache_cost(gaps: Sequence[float], ttl: str) -> float:
    """The prompt cost of turns after ``gaps`` on the ``ttl`` tier, in units of one prompt at
    the base input price: a turn after a gap within the TTL reads the prompt, one after a
    longer gap writes it again; every turn writes its own growth."""
    ttl_seconds = TTL_SECONDS[ttl]
    write = CACHE_WRITE_1H_MULTIPLIER if ttl == "1h" else CACHE_WRITE_5M_MULTIPLIER
    warm = sum(1 for gap in gaps if gap <= ttl_seconds)
    cold = len(gaps) - warm
    return warm * CACHE_READ_MULTIPLIER + cold * write + len(gaps) * GROWTH_SHARE * write


def choose_ttl(gaps: Sequence[float]) -> str:
    """The cache tier for a session with these gaps between messages (``cache_ttl: auto``).

    "1h" only when it is clearly cheaper on the recent gaps (so only where gaps of 5-60
    minutes are common); "5m" otherwise and until there are enough gaps to tell.
    """
    recent = list(gaps)[-RECENT_GAPS:]
    if len(recent) < MIN_GAPS_FOR_TTL:
        return "5m"
    five = relative_cache_cost(recent, "5m")
    hour = relative_cache_cost(recent, "1h")
    return "1h" if hour < five * (1 - TTL_SWITCH_MARGIN) else "5m"
