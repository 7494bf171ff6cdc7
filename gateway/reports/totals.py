"""Texts for ``/usage`` and ``/status``: what a session cost, where its context stands, and (for
admins) how the daemon itself is doing."""

from __future__ import annotations

from collections.abc import Mapping

from agent.model_table import TOKENS_PER_MTOK, ModelInfo
from gateway.store.records import UsageTotals


def cost_without_caching(totals: UsageTotals, model: ModelInfo) -> float:
    """What the same calls would have cost with every prompt token billed as uncached input."""
    return (
        totals.prompt_tokens * model.input_per_mtok + totals.output_tokens * model.output_per_mtok
    ) / TOKENS_PER_MTOK


def usage_text(session_id: int, totals: UsageTotals, model: ModelInfo) -> str:
    """The ``/usage`` report of one session."""
    lines = [
        f"Usage of session #{session_id} ({totals.calls} API calls)",
        f"Prompt tokens: {totals.prompt_tokens:,} (uncached {totals.input_tokens:,}, "
        f"cache read {totals.cache_read_tokens:,}, cache write {totals.cache_write_tokens:,})",
        f"Output tokens: {totals.output_tokens:,}",
        f"Cache hit rate: {totals.cache_hit_rate:.1%}",
        f"Cost: ${totals.cost_usd:.4f}",
    ]
    if model.known and totals.calls:
        lines[-1] += f" (without caching: ${cost_without_caching(totals, model):.4f})"
    return "\n".join(lines)


def status_text(
    *,
    session_id: int,
    key: str,
    in_context: int,
    stored: int,
    prompt_tokens: int | None,
    context_length: int,
    engine_status: Mapping[str, object],
    compactions: int,
    caching_line: str,
    summary_line: str = "",
    model: str = "",
    last_compaction: str = "",
) -> str:
    """The ``/status`` report of one session."""
    if prompt_tokens:
        size = (
            f"{prompt_tokens:,} / {context_length:,} tokens ({prompt_tokens / context_length:.0%})"
        )
    else:
        size = f"not measured yet / {context_length:,} tokens"
    engine = ", ".join(f"{k}={v}" for k, v in engine_status.items())
    return "\n".join(
        [
            f"Session #{session_id} ({key})",
            *([f"Model: {model}"] if model else []),
            f"Messages: {in_context} in context, {stored} stored",
            f"Context: {size}",
            f"Compactions: {compactions}",
            *([last_compaction] if last_compaction else []),
            f"Engine: {engine}",
            caching_line,
            *([summary_line] if summary_line else []),
        ]
    )


def health_text(quarantined: int, failures: dict[str, str | None]) -> str:
    """The daemon's health for an admin's ``/status``: quarantined updates, each adapter."""
    lines = [f"Quarantined updates: {quarantined} (table dead_letters; see hermes doctor)"]
    for name, failure in failures.items():
        lines.append(f"{name}: {'running' if failure is None else f'stopped: {failure}'}")
    return "\n".join(lines)
