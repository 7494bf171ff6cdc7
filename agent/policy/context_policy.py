"""When to compact beyond the fixed triggers: when the prompt cache is cold anyway and it pays.

After a gap longer than the cache TTL the whole prompt is written to the cache again at the
first turn (1.25x the input price), then read on every later turn of the visit (0.1x). A
compaction just before that first turn makes both smaller; it costs one summary request at the
summary model's prices. The rule: compact when the expected saving over the visit exceeds that
cost with a margin. Pure functions: the inputs are token counts, prices and message times, so
the same transcript gives the same decisions, live or replayed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.policy.cost_model import DEFAULT_TURN_GROWTH_TOKENS, Prices, expected_visit_cost
from agent.types import CompactionEstimate, Message

DEFAULT_MARGIN = 0.25
"""The saving must beat the summary's cost by this share: estimates are estimates."""
COLD_MARGIN_SECONDS = 30.0
"""Extra seconds past the TTL before a cache counts as cold: the session's last model call is
known by its message's time, and the call itself came a little later."""
SUMMARY_REQUEST_OVERHEAD_TOKENS = 700
"""The summary request's instructions and framing, on top of what it summarises."""


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a compaction pays, with the numbers behind it."""

    pays: bool
    saving_usd: float
    """Expected prompt cost saved over the visit (compaction not counted)."""
    cost_usd: float
    """Expected cost of the summary request."""
    reason: str

    @property
    def net_saving_usd(self) -> float:
        """Saving minus the summary's cost: the policy's estimated gain."""
        return self.saving_usd - self.cost_usd


PRUNE_TURNS = 2.0
"""Turns a pruned prompt is expected to serve at least: the one starting and the next."""
MAX_REQUESTS_PER_TURN = 20.0


def requests_per_turn(messages: Sequence[Message]) -> float:
    """Model requests a turn of this session makes on average, from its context: one per
    assistant message, per user message (a chat: 1; an agent at work: several)."""
    users = sum(1 for m in messages if m.get("role") == "user")
    answers = sum(1 for m in messages if m.get("role") == "assistant")
    return max(1.0, min(MAX_REQUESTS_PER_TURN, answers / max(1, users)))


def should_prune(
    saved_tokens: int,
    rewritten_tokens: int,
    *,
    cold: bool,
    main: Prices,
    expected_requests: float = PRUNE_TURNS,
    margin: float = DEFAULT_MARGIN,
) -> Decision:
    """Whether clearing ``saved_tokens`` of used tool outputs pays, when everything from the
    first cleared output on (``rewritten_tokens``, after clearing) must be written again.

    With a cold cache the whole prompt is written anyway: any saving pays. With a warm one the
    rewrite costs the write price instead of the read price, and each later request reads
    ``saved_tokens`` fewer tokens.
    """
    saving = saved_tokens * main.cache_read * expected_requests
    if cold:
        saving += saved_tokens * main.cache_write
        cost = 0.0
    else:
        cost = rewritten_tokens * (main.cache_write - main.cache_read)
    pays = saved_tokens > 0 and saving > cost * (1 + margin)
    verdict = "pays" if pays else "does not pay"
    reason = (
        f"{verdict}: clearing {saved_tokens:,} tokens of used tool outputs "
        f"({'cold cache' if cold else f'rewriting {rewritten_tokens:,} tokens'}) saves "
        f"${saving:.4f} for ${cost:.4f}"
    )
    return Decision(pays, saving, cost, reason)


def should_clear_in_turn(
    saved_tokens: int,
    rewritten_tokens: int,
    waste_tokens: int,
    *,
    main: Prices,
    remaining_requests: float,
    margin: float = DEFAULT_MARGIN,
) -> Decision:
    """Whether clearing ``saved_tokens`` of used tool outputs before the next request of a
    tool loop pays, and pays *now* rather than after a few more steps.

    The rewrite costs ``rewritten_tokens`` (what the cache held from the first cleared output
    on, written again instead of read) at the write price less the read price; each of the
    ``remaining_requests`` (the next one included) reads ``saved_tokens`` fewer. That alone
    would clear a little at every step, each time writing the kept newest outputs again. So a
    clearing also waits until the reads already paid for clearable outputs since the last one
    (``waste_tokens``, summed over the requests) reach its cost: batches then grow until a
    rewrite buys many steps (the economic order quantity: the holding cost of a cycle equals
    its set-up cost).
    """
    saving = saved_tokens * main.cache_read * remaining_requests
    cost = rewritten_tokens * (main.cache_write - main.cache_read)
    waste = waste_tokens * main.cache_read
    pays = saved_tokens > 0 and saving > cost * (1 + margin) and waste >= cost
    verdict = "pays" if pays else "does not pay"
    reason = (
        f"{verdict}: clearing {saved_tokens:,} tokens of used tool outputs (rewriting "
        f"{rewritten_tokens:,} cached tokens) saves ${saving:.4f} over ~{remaining_requests:.0f} "
        f"requests for ${cost:.4f}; their reads since the last clearing cost ${waste:.4f}"
    )
    return Decision(pays, saving, cost, reason)


def cache_is_cold(last_call_at: float | None, now: float, ttl_seconds: float) -> bool:
    """Whether the cache of a session whose last model call was at ``last_call_at`` expired.

    Unknown times (a session that never called the model, or has no message times) count as
    warm: the policy then does nothing and the fixed triggers behave as before.
    """
    if last_call_at is None:
        return False
    return now - last_call_at > ttl_seconds + COLD_MARGIN_SECONDS


def should_compact_cold(
    estimate: CompactionEstimate,
    *,
    main: Prices,
    summary: Prices,
    expected_turns: float,
    growth_tokens: float = DEFAULT_TURN_GROWTH_TOKENS,
    margin: float = DEFAULT_MARGIN,
) -> Decision:
    """Whether compacting a cold session before its next visit pays.

    Saving: the visit's prompt cost at the current size minus at the compacted size (the first
    turn's rewrite and every later turn's reads). Cost: one summary request reading the middle
    and the previous summary and writing the new summary, at the summary model's prices.
    """
    cost = summary.request_cost(
        estimate.summarized_tokens + SUMMARY_REQUEST_OVERHEAD_TOKENS, estimate.summary_tokens
    )
    if estimate.compacted_tokens >= estimate.prompt_tokens:
        return Decision(False, 0.0, cost, "the compacted prompt would not be smaller")
    keep = expected_visit_cost(
        main,
        estimate.prompt_tokens,
        cache_warm=False,
        expected_turns=expected_turns,
        growth_tokens=growth_tokens,
    )
    compacted = expected_visit_cost(
        main,
        estimate.compacted_tokens,
        cache_warm=False,
        expected_turns=expected_turns,
        growth_tokens=growth_tokens,
    )
    saving = keep - compacted
    pays = saving > cost * (1 + margin)
    verdict = "pays" if pays else "does not pay"
    reason = (
        f"{verdict}: {estimate.prompt_tokens:,} -> ~{estimate.compacted_tokens:,} tokens over "
        f"~{expected_turns:.1f} turns saves ${saving:.4f}, the summary costs ${cost:.4f}"
    )
    return Decision(pays, saving, cost, reason)
