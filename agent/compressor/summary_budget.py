"""How long a compaction's summary may be, and how long it is expected to be.

The budget caps what the summary model is asked to write (a share of what it replaces, within
bounds tied to the context window); the expectation is what the context policy's cost model
assumes before a summary exists (an update grows the previous summary a little).
"""

from __future__ import annotations

SUMMARY_BUDGET_RATIO = 0.20
"""The summary may use this share of the tokens it replaces..."""
MIN_SUMMARY_TOKENS = 2_000
"""...but at least this many..."""
MAX_SUMMARY_CONTEXT_RATIO = 0.05
MAX_SUMMARY_TOKENS_CAP = 12_000
"""...and at most min(context x MAX_SUMMARY_CONTEXT_RATIO, MAX_SUMMARY_TOKENS_CAP)."""
PRUNED_ONLY_RATIO = 0.60
"""When clearing tool outputs alone gets the context this far under the threshold, stop there."""
SUMMARY_MESSAGE_OVERHEAD_TOKENS = 64
"""The summary message's prefix and framing, on top of the summary text."""
MIN_CHUNK_TOKENS = 256
"""Below this much room for conversation per request, the summary model is not worth calling."""
COLD_TAIL_TOKENS = 800
"""Verbatim tail of a compaction by the context policy (``cold_start``, ``idle``): the end of
the last visit, enough to pick up the thread; the cache is cold, so a small prompt pays."""
COLD_PROTECT_LAST_N = 1
"""A policy compaction keeps at least the newest message; the token budget decides the rest."""
COLD_SUMMARY_TOKENS = 2_000
"""Summary budget of a policy compaction (also at most the usual summary cap)."""
SUMMARY_UPDATE_GROWTH = 1.1
SUMMARY_NEW_SHARE = 0.05
"""An updated summary is expected at 1.1x the previous one plus 5% of the new content..."""
FIRST_SUMMARY_SHARE = 0.15
MIN_EXPECTED_SUMMARY_TOKENS = 600
"""...a first one at 15% of what it covers, at least 600 tokens (the template's headings)."""


def max_summary_tokens(context_length: int) -> int:
    """The longest summary a model with this window is ever asked for."""
    return int(min(context_length * MAX_SUMMARY_CONTEXT_RATIO, MAX_SUMMARY_TOKENS_CAP))


def summary_budget(content_tokens: int, max_tokens: int, *, cold: bool = False) -> int:
    """Output tokens allowed for a summary of ``content_tokens`` tokens (``cold``: a policy
    compaction's, smaller)."""
    budget = max(
        1, min(max(int(content_tokens * SUMMARY_BUDGET_RATIO), MIN_SUMMARY_TOKENS), max_tokens)
    )
    return min(budget, COLD_SUMMARY_TOKENS) if cold else budget


def expected_summary_tokens(content_tokens: int, previous_tokens: int) -> int:
    """The length a summary is expected to have (before the budget caps it).

    An update grows the previous summary by a little of what it adds; a first summary is a
    share of what it covers, with a floor for the template's headings.
    """
    if previous_tokens:
        return round(previous_tokens * SUMMARY_UPDATE_GROWTH + content_tokens * SUMMARY_NEW_SHARE)
    return max(MIN_EXPECTED_SUMMARY_TOKENS, round(content_tokens * FIRST_SUMMARY_SHARE))
