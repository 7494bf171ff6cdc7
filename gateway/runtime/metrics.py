"""What only the running daemon knows, as Prometheus series in a registry it owns.

Timings are observed where they happen (the gateway times a turn; the model's share is the
turn's :attr:`~agent.loop.TurnResult.wait_seconds`); levels (messages waiting, sessions
loaded, memory) are read at each scrape. The totals the store holds (messages, tokens, cost)
are not here: ``/metrics`` reads those from the database, so a restart shows the same totals.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

TURN_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds: a turn runs from a fraction of a second (a short answer) to minutes (tools)."""


class DaemonMetrics:
    """The daemon's own series; :attr:`registry` is what ``/metrics`` adds to the store's."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.turn_seconds = Histogram(
            "hermes_turn_seconds",
            "One agent turn from its start to its reply delivered",
            ["platform"],
            buckets=TURN_BUCKETS,
            registry=self.registry,
        )
        self.model_seconds = Histogram(
            "hermes_model_seconds",
            "Time a turn waited on the model (all its calls)",
            ["platform"],
            buckets=TURN_BUCKETS,
            registry=self.registry,
        )
        self.delivery_retries = Counter(
            "hermes_delivery_retries",
            "Sends of a reply part attempted again after a transient failure",
            ["platform"],
            registry=self.registry,
        )
        self._queue_depth = Gauge(
            "hermes_queue_depth",
            "Messages waiting in the session workers for their turn",
            registry=self.registry,
        )
        self._live_sessions = Gauge(
            "hermes_live_sessions", "Sessions loaded in memory", registry=self.registry
        )
        # process_resident_memory_bytes and friends (read from /proc on Linux).
        ProcessCollector(registry=self.registry)

    def watch(self, *, queue_depth: Callable[[], int], live_sessions: Callable[[], int]) -> None:
        """Read the levels from these at each scrape."""
        self._queue_depth.set_function(queue_depth)
        self._live_sessions.set_function(live_sessions)

    def retried(self, platform: str) -> None:
        """A send is about to be attempted again."""
        self.delivery_retries.labels(platform).inc()
