"""The overview page's numbers: spend against the limits, totals and the last days per day.

Every number comes from the queries behind ``hermes usage`` (``usage_by``, ``spend_since``) and
``/usage`` (calls grouped by purpose, model and visit start, priced into buckets by
:func:`gateway.reports.usage.spend`), so the page and the CLI agree for the same period.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.model_table import ModelInfo
from gateway.config.schema import LimitsSettings
from gateway.reports.failover import failover_lines
from gateway.reports.usage import BUCKET_LABELS, PolicySavings, Spend, policy_savings, spend
from gateway.store.ports import DashboardStore
from gateway.store.records import UsageGroup, UsageTotals
from gateway.store.repository_voice import SpeechTotal
from gateway.users.access import day_start, month_start, usage_window

CHART_DAYS = 30
"""The overview's charts: the last 30 UTC days, today included (``hermes usage``'s default)."""


@dataclass(frozen=True, slots=True)
class DayUsage:
    """One UTC day: its spend per bucket and its token totals."""

    day: str
    spend: Spend
    totals: UsageTotals


@dataclass(frozen=True, slots=True)
class Overview:
    """What the overview page shows."""

    spent_today: float
    spent_month: float
    limits: LimitsSettings
    totals: UsageTotals
    """The last :data:`CHART_DAYS` days together."""
    days: list[DayUsage]
    """Every one of the last :data:`CHART_DAYS` days, oldest first (empty days included)."""
    messages_received: int
    messages_answered: int
    savings: PolicySavings
    """The context policy's estimate for its compactions of the last :data:`CHART_DAYS` days."""
    speech: tuple[SpeechTotal, ...] = ()
    """Voice replies of the last :data:`CHART_DAYS` days, per speech provider."""
    failover: tuple[str, ...] = ()
    """Who leads, since when, the standbys seen, takeovers (empty: failover never ran)."""

    @property
    def spoken_chars(self) -> int:
        """Characters spoken in voice replies over :attr:`days`."""
        return sum(total.chars for total in self.speech)

    @property
    def speech_cost(self) -> float:
        """What the voice replies over :attr:`days` cost."""
        return sum(total.cost_usd for total in self.speech)

    @property
    def spend(self) -> Spend:
        """The buckets summed over :attr:`days`."""
        return Spend(**{b: sum(getattr(d.spend, b) for d in self.days) for b in BUCKET_LABELS})


def chart_days(now: datetime | None = None, days: int = CHART_DAYS) -> list[str]:
    """The ``YYYY-MM-DD`` of each of the last ``days`` UTC days, oldest first."""
    first = usage_window(days, now)
    return [f"{first + timedelta(days=i):%Y-%m-%d}" for i in range(days)]


def per_day(
    groups: list[tuple[str, UsageGroup]], main: ModelInfo, days: list[str]
) -> list[DayUsage]:
    """Each day's spend per bucket and totals from its usage groups."""
    by_day: dict[str, list[UsageGroup]] = defaultdict(list)
    for day, group in groups:
        by_day[day].append(group)
    return [
        DayUsage(
            day=day,
            spend=spend(by_day[day], main),
            totals=sum((g.totals for g in by_day[day]), UsageTotals()),
        )
        for day in days
    ]


async def build_overview(
    repo: DashboardStore, limits: LimitsSettings, main: ModelInfo, now: datetime | None = None
) -> Overview:
    """The overview as of ``now`` (default: the present)."""
    days = chart_days(now)
    since = usage_window(CHART_DAYS, now)
    grouped = await repo.usage_groups_by_day(since)
    daily = per_day([(g.day, g.group) for g in grouped], main, days)
    inbound = await repo.inbound_counts()
    return Overview(
        spent_today=await repo.spend_since(day_start(now)),
        spent_month=await repo.spend_since(month_start(now)),
        limits=limits,
        totals=sum((d.totals for d in daily), UsageTotals()),
        days=daily,
        messages_received=sum(inbound.values()),
        messages_answered=sum(n for (_, status), n in inbound.items() if status == "done"),
        savings=policy_savings(await repo.compactions_since(since)),
        speech=tuple(await repo.speech_totals(since)),
        failover=tuple(failover_lines(await repo.failover_state())),
    )
