"""The ``context.lcm`` configuration section: its keys, defaults and validation."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

DEFAULT_THRESHOLD = 0.75
"""Compact when the API-reported prompt reaches this share of the window."""
DEFAULT_LEAF_CHUNK_TOKENS = 20_000
"""Tokens of original messages summarised by one leaf node."""
DEFAULT_CONDENSE_FANOUT = 4
"""How many nodes of one level are condensed into one node of the next level."""
DEFAULT_FRESH_TAIL_COUNT = 16
DEFAULT_FRESH_TAIL_RATIO = 0.25
"""The fresh tail's default token budget as a share of the window."""
DEFAULT_SUMMARY_BUDGET_RATIO = 0.15
"""All summaries in context together stay under this share of the window."""
DEFAULT_LEAF_SUMMARY_TOKENS = 1_200
DEFAULT_CONDENSED_SUMMARY_TOKENS = 1_500
DEFAULT_EXPAND_PAGE_TOKENS = 4_000
DEFAULT_GREP_LIMIT = 20
MAX_CHUNK_WINDOW_RATIO = 0.5
"""A leaf chunk never takes more than this share of the summary model's window."""


class LcmConfigError(ValueError):
    """The ``context.lcm`` section has an unknown key or a bad value."""


@dataclass(frozen=True, slots=True)
class LcmSettings:
    """Resolved settings of the lossless engine (token budgets already clamped to the window)."""

    threshold: float
    leaf_chunk_tokens: int
    condense_fanout: int
    fresh_tail_count: int
    fresh_tail_tokens: int
    summary_budget_tokens: int
    leaf_summary_tokens: int
    condensed_summary_tokens: int
    expand_page_tokens: int
    grep_limit: int


_INT_KEYS = {
    "leaf_chunk_tokens",
    "condense_fanout",
    "fresh_tail_count",
    "fresh_tail_tokens",
    "summary_budget_tokens",
    "leaf_summary_tokens",
    "condensed_summary_tokens",
    "expand_page_tokens",
    "grep_limit",
}


def _checked(section: dict[str, Any]) -> dict[str, Any]:
    known = {f.name for f in fields(LcmSettings)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise LcmConfigError(f"context.lcm: unknown key(s) {unknown}; known: {sorted(known)}")
    for key, value in section.items():
        if key in _INT_KEYS and (isinstance(value, bool) or not isinstance(value, int)):
            raise LcmConfigError(f"context.lcm.{key} must be an integer, not {value!r}")
        if key in _INT_KEYS and value < 1:
            raise LcmConfigError(f"context.lcm.{key} must be at least 1, not {value}")
    threshold = section.get("threshold", DEFAULT_THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise LcmConfigError(f"context.lcm.threshold must be a number, not {threshold!r}")
    if not 0.05 <= float(threshold) <= 0.98:
        raise LcmConfigError(f"context.lcm.threshold must be in [0.05, 0.98], not {threshold}")
    if section.get("condense_fanout", DEFAULT_CONDENSE_FANOUT) < 2:
        raise LcmConfigError("context.lcm.condense_fanout must be at least 2")
    return section


def load_settings(
    section: dict[str, Any], context_length: int, summary_context_length: int | None = None
) -> LcmSettings:
    """Validate ``context.lcm`` and fill in defaults sized to the model's window."""
    values = _checked(dict(section or {}))
    summary_window = summary_context_length or context_length
    chunk_cap = max(1, int(summary_window * MAX_CHUNK_WINDOW_RATIO))
    return LcmSettings(
        threshold=float(values.get("threshold", DEFAULT_THRESHOLD)),
        leaf_chunk_tokens=min(
            values.get("leaf_chunk_tokens", DEFAULT_LEAF_CHUNK_TOKENS), chunk_cap
        ),
        condense_fanout=values.get("condense_fanout", DEFAULT_CONDENSE_FANOUT),
        fresh_tail_count=values.get("fresh_tail_count", DEFAULT_FRESH_TAIL_COUNT),
        fresh_tail_tokens=values.get(
            "fresh_tail_tokens", int(context_length * DEFAULT_FRESH_TAIL_RATIO)
        ),
        summary_budget_tokens=values.get(
            "summary_budget_tokens", int(context_length * DEFAULT_SUMMARY_BUDGET_RATIO)
        ),
        leaf_summary_tokens=values.get("leaf_summary_tokens", DEFAULT_LEAF_SUMMARY_TOKENS),
        condensed_summary_tokens=values.get(
            "condensed_summary_tokens", DEFAULT_CONDENSED_SUMMARY_TOKENS
        ),
        expand_page_tokens=values.get("expand_page_tokens", DEFAULT_EXPAND_PAGE_TOKENS),
        grep_limit=values.get("grep_limit", DEFAULT_GREP_LIMIT),
    )
