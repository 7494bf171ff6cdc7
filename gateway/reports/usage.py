"""``/usage`` (and ``hermes sessions usage``): what a session cost and where the money went.

The spend is split into the buckets the context policy works on: cache writes at a visit's
start (the cold prefix written again after a gap past the TTL), other cache writes, cache
reads, uncached input, summaries (every compaction's summary request, at its model's prices)
and output; plus what the policy's own compactions (``cold_start``, ``idle``) were estimated to
save when it decided on them. The buckets reprice the stored token counts exactly as the
recorder priced each call, so they add up to the recorded cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from agent.model_table import TOKENS_PER_MTOK, ModelInfo, pricing_for_call
from gateway.reports.totals import usage_text
from gateway.store.ports import UsageReportStore
from gateway.store.records import CompactionRecord, UsageGroup, UsageTotals
from gateway.store.repository_usage import CHAT_PURPOSE

BUCKET_LABELS = {
    "visit_start_writes": "visit-start cache writes",
    "other_writes": "other cache writes",
    "reads": "cache reads",
    "uncached": "uncached input",
    "summaries": "summaries",
    "output": "output",
}


@dataclass(frozen=True, slots=True)
class Spend:
    """USD per bucket (see the module docstring); :attr:`total` is their sum."""

    visit_start_writes: float = 0.0
    other_writes: float = 0.0
    reads: float = 0.0
    uncached: float = 0.0
    summaries: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        return sum(value for _, value in self.items())

    def items(self) -> list[tuple[str, float]]:
        """(bucket, USD) in report order."""
        return [(f.name, float(getattr(self, f.name))) for f in fields(self)]


@dataclass(frozen=True, slots=True)
class PolicySavings:
    """The context policy's compactions and the saving estimated when it decided on them."""

    compactions: int = 0
    saving_usd: float = 0.0
    """Prompt cost expected to be saved over the visits they served."""
    cost_usd: float = 0.0
    """Their summaries' expected cost (what they really cost is in ``Spend.summaries``)."""

    @property
    def net_usd(self) -> float:
        return self.saving_usd - self.cost_usd


def spend(groups: Sequence[UsageGroup], main: ModelInfo) -> Spend:
    """The session's spend per bucket from its usage groups.

    A chat call is priced as the recorder priced it (:func:`agent.model_table.pricing_for_call`:
    the main model's override, else its own list price, else the main model's); every other
    call (summaries) counts at its recorded cost.
    """
    buckets = dict.fromkeys(BUCKET_LABELS, 0.0)
    for group in groups:
        totals = group.totals
        if group.purpose != CHAT_PURPOSE:
            buckets["summaries"] += totals.cost_usd
            continue
        info = pricing_for_call(group.model, main)
        per_input = info.input_per_mtok / TOKENS_PER_MTOK
        writes = _write_units(totals, info) * per_input
        buckets["visit_start_writes" if group.visit_start else "other_writes"] += writes
        buckets["reads"] += totals.cache_read_tokens * info.cache_read_multiplier * per_input
        buckets["uncached"] += totals.input_tokens * per_input
        buckets["output"] += totals.output_tokens * info.output_per_mtok / TOKENS_PER_MTOK
    return Spend(**buckets)


def _write_units(totals: UsageTotals, info: ModelInfo) -> float:
    writes_1h = min(totals.cache_write_1h_tokens, totals.cache_write_tokens)
    writes_5m = totals.cache_write_tokens - writes_1h
    return writes_5m * info.cache_write_5m_multiplier + writes_1h * info.cache_write_1h_multiplier


CLEARING_TRIGGER = "prune"
"""Clearings of used tool outputs: estimated too, but reads saved for a rewrite, no summary."""


def policy_savings(compactions: Sequence[CompactionRecord]) -> PolicySavings:
    """Sum the estimates the context policy recorded with its cold and idle compactions."""
    return _estimated([c for c in compactions if c.trigger != CLEARING_TRIGGER])


def clearing_savings(compactions: Sequence[CompactionRecord]) -> PolicySavings:
    """Sum the estimates recorded with the clearings of used tool outputs inside tool loops:
    the reads they were expected to save against the cache they wrote again."""
    return _estimated([c for c in compactions if c.trigger == CLEARING_TRIGGER])


def _estimated(compactions: Sequence[CompactionRecord]) -> PolicySavings:
    estimated = [c for c in compactions if c.estimated_saving_usd is not None]
    return PolicySavings(
        compactions=len(estimated),
        saving_usd=sum(c.estimated_saving_usd or 0.0 for c in estimated),
        cost_usd=sum(c.estimated_cost_usd or 0.0 for c in estimated),
    )


def spend_text(costs: Spend, savings: PolicySavings, clearings: PolicySavings | None = None) -> str:
    """The "where the money went" lines of ``/usage`` (``clearings``: of used tool outputs
    inside tool loops, when there were any)."""
    total = costs.total
    lines = ["Where the money went:"]
    for bucket, usd in costs.items():
        share = f" ({usd / total:.0%})" if total > 0 else ""
        lines.append(f"  {BUCKET_LABELS[bucket]}: ${usd:.4f}{share}")
    if savings.compactions:
        lines.append(
            f"Context policy: {savings.compactions} cold/idle compaction(s), estimated to save "
            f"${savings.saving_usd:.4f} of prompt cost for ${savings.cost_usd:.4f} of summaries "
            f"(net ${savings.net_usd:.4f})"
        )
    else:
        lines.append("Context policy: no cold/idle compaction yet")
    if clearings is not None and clearings.compactions:
        lines.append(
            f"Used tool outputs cleared inside tool loops: {clearings.compactions} time(s), "
            f"estimated to save ${clearings.saving_usd:.4f} of reads for "
            f"${clearings.cost_usd:.4f} of cache rewrites"
        )
    return "\n".join(lines)


async def usage_report(repo: UsageReportStore, session_id: int, main: ModelInfo) -> str:
    """The full ``/usage`` text of one session."""
    groups = await repo.usage_breakdown(session_id)
    totals = sum((g.totals for g in groups), UsageTotals())
    compactions = await repo.list_compactions(session_id)
    savings, clearings = policy_savings(compactions), clearing_savings(compactions)
    return (
        usage_text(session_id, totals, main)
        + "\n"
        + spend_text(spend(groups, main), savings, clearings)
    )
