"""``/metrics``: the store's totals in the Prometheus text format.

The totals are read from the database at each scrape, so a restarted daemon or a standalone
``hermes dashboard`` reports the same counters as the database holds. Series only the running
daemon knows (latency histograms, queue depth, memory) are added when it serves the page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agent.model_table import ModelInfo
from gateway.reports.usage import spend
from gateway.store.ports import DashboardStore
from gateway.store.records import UsageTotals
from gateway.store.repository_failover import FailoverState
from gateway.store.repository_voice import SpeechTotal

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
INBOUND_OUTCOMES = {"done": "answered", "refused": "refused", "failed": "failed"}
"""Inbound statuses counted as a series of their own (``hermes_messages_<name>_total``)."""


class _Snapshot(Collector):
    """Metric families computed beforehand (the store is read asynchronously, a collector's
    ``collect`` is not)."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def _message_families(inbound: dict[tuple[str, str], int]) -> list[Metric]:
    received = CounterMetricFamily(
        "hermes_messages_received",
        "Platform messages recorded in the inbound table",
        labels=["platform"],
    )
    per_platform: dict[str, int] = defaultdict(int)
    for (platform, _), count in inbound.items():
        per_platform[platform] += count
    for platform, count in sorted(per_platform.items()):
        received.add_metric([platform], count)
    families: list[Metric] = [received]
    for status, name in INBOUND_OUTCOMES.items():
        family = CounterMetricFamily(
            f"hermes_messages_{name}", f"Inbound messages with status {status}", labels=["platform"]
        )
        for platform in sorted(per_platform):
            family.add_metric([platform], inbound.get((platform, status), 0))
        families.append(family)
    return families


def _usage_families(totals: UsageTotals, costs: Iterable[tuple[str, float]]) -> list[Metric]:
    tokens = CounterMetricFamily("hermes_tokens", "Tokens of every model call", labels=["kind"])
    for kind, value in (
        ("uncached_input", totals.input_tokens),
        ("cache_read", totals.cache_read_tokens),
        ("cache_write", totals.cache_write_tokens),
        ("output", totals.output_tokens),
    ):
        tokens.add_metric([kind], value)
    cost = CounterMetricFamily(
        "hermes_cost_usd", "Recorded cost in USD by bucket (as /usage splits it)", labels=["bucket"]
    )
    for bucket, usd in costs:
        cost.add_metric([bucket], usd)
    calls = CounterMetricFamily("hermes_model_calls", "Model calls recorded")
    calls.add_metric([], totals.calls)
    hit = GaugeMetricFamily(
        "hermes_cache_hit_ratio", "Share of all prompt tokens read from the prompt cache"
    )
    hit.add_metric([], totals.cache_hit_rate)
    return [tokens, cost, calls, hit]


def _speech_families(totals: Iterable[SpeechTotal]) -> list[Metric]:
    chars = CounterMetricFamily(
        "hermes_speech_characters", "Characters spoken in voice replies", labels=["provider"]
    )
    cost = CounterMetricFamily(
        "hermes_speech_cost_usd", "What the voice replies cost", labels=["provider"]
    )
    answers = CounterMetricFamily(
        "hermes_speech_answers", "Answers spoken as voice replies", labels=["provider"]
    )
    for total in totals:
        chars.add_metric([total.provider], total.chars)
        cost.add_metric([total.provider], total.cost_usd)
        answers.add_metric([total.provider], total.answers)
    return [chars, cost, answers]


def _failover_families(state: FailoverState | None) -> list[Metric]:
    """Who leads (an info-style gauge per holder), since when, the epoch, the takeovers and
    the members seen by role; nothing when failover never ran on this database."""
    if state is None:
        return []
    lease = state.lease
    leader = GaugeMetricFamily(
        "hermes_failover_leader", "1 for the gateway holding a live lease", labels=["holder"]
    )
    if lease.live and lease.holder:
        leader.add_metric([lease.holder], 1)
    since = GaugeMetricFamily(
        "hermes_failover_leader_since_seconds", "When the current leader took the lease (Unix)"
    )
    if lease.live and lease.acquired_at is not None:
        since.add_metric([], lease.acquired_at.timestamp())
    epoch = GaugeMetricFamily("hermes_failover_epoch", "The lease's epoch (fencing token)")
    epoch.add_metric([], lease.epoch)
    takeovers = CounterMetricFamily(
        "hermes_failover_takeovers", "Times the lease passed from one gateway to another"
    )
    takeovers.add_metric([], lease.takeovers)
    members = GaugeMetricFamily(
        "hermes_failover_members", "Gateways seen recently, by role", labels=["role"]
    )
    members.add_metric(["leader"], len(state.leaders))
    members.add_metric(["standby"], len(state.standbys))
    return [leader, since, epoch, takeovers, members]


async def metrics_text(
    repo: DashboardStore, main: ModelInfo, daemon: CollectorRegistry | None = None
) -> bytes:
    """The Prometheus exposition of the store's totals, and of the running daemon's own
    series when it serves them (``daemon``)."""
    grouped = await repo.usage_groups_by_day(EPOCH)
    groups = [g.group for g in grouped]
    totals = sum((g.totals for g in groups), UsageTotals())
    compactions = CounterMetricFamily(
        "hermes_compactions", "Compaction attempts", labels=["trigger", "outcome"]
    )
    for (trigger, outcome), count in sorted((await repo.compaction_counts()).items()):
        compactions.add_metric([trigger, outcome], count)
    quarantined = GaugeMetricFamily(
        "hermes_quarantined_updates", "Updates kept in quarantine (dead_letters)"
    )
    quarantined.add_metric([], await repo.count_dead_letters())
    families = [
        *_speech_families(await repo.speech_totals(EPOCH)),
        *_message_families(await repo.inbound_counts()),
        *_usage_families(totals, spend(groups, main).items()),
        compactions,
        quarantined,
        *_failover_families(await repo.failover_state()),
        *(daemon.collect() if daemon is not None else ()),
    ]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(families))
    return generate_latest(registry)
