"""The load bench's memory and CPU figures: a fitted RSS slope and CPU per message, both taken
after the warm-up only."""

from __future__ import annotations

from bench.load_memory import (
    BYTES_PER_MB,
    RssSample,
    cpu_ms_after_warmup,
    rss_slope,
)

EXPECTED = 4000


def test_rss_growing_one_mb_per_thousand_messages_after_warmup_has_slope_one() -> None:
    warmup = [RssSample(n, 100 * BYTES_PER_MB + 50 * n * 1000) for n in range(0, 1000, 100)]
    steady = [RssSample(n, 200 * BYTES_PER_MB + n * 1000) for n in range(1000, 4001, 100)]

    slope = rss_slope(warmup + steady, EXPECTED)

    assert slope is not None
    assert abs(slope - 1.0) < 1e-9


def test_flat_rss_after_warmup_has_slope_zero_whatever_the_warmup_did() -> None:
    samples = [RssSample(0, 50 * BYTES_PER_MB), RssSample(500, 150 * BYTES_PER_MB)]
    samples += [RssSample(n, 180 * BYTES_PER_MB) for n in range(1000, 4001, 500)]

    assert rss_slope(samples, EXPECTED) == 0.0


def test_no_slope_without_samples_after_warmup() -> None:
    assert rss_slope([RssSample(10, 1), RssSample(20, 2)], EXPECTED) is None


def test_cpu_per_message_counts_only_what_was_spent_after_warmup() -> None:
    samples = [
        RssSample(0, 0, cpu_seconds=0.0),
        RssSample(1000, 0, cpu_seconds=9.0),  # start-up work: not counted
        RssSample(3000, 0, cpu_seconds=19.0),
    ]

    assert cpu_ms_after_warmup(samples, EXPECTED) == 5.0
