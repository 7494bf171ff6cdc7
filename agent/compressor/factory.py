"""The built-in compressor built from an engine context (the ``compressor`` engine's factory)."""

from __future__ import annotations

from typing import Any

from agent.compressor.context_compressor import ContextCompressor
from agent.engines.context_engine import EngineContext


def create_compressor(ctx: EngineContext) -> ContextCompressor:
    """Build the built-in compressor from an engine context (the ``compressor`` factory)."""
    return ContextCompressor(
        ctx.context_length,
        ctx.threshold,
        ctx.target_ratio,
        ctx.protect_last_n,
        ctx.protect_first_n,
        ctx.call_llm,
        enabled=ctx.enabled,
        prune_tail=ctx.prune_tail,
        summary_context_length=ctx.summary_context_length,
        clock=ctx.clock,
        collect_durable_facts=ctx.collect_durable_facts,
        **_failure_settings(ctx.engine_config),
    )


def _failure_settings(section: dict[str, Any]) -> dict[str, Any]:
    """Retry delays and cooldown from the engine's config section (``context.compressor``)."""
    settings: dict[str, Any] = {}
    if "retry_delays" in section:
        settings["retry_delays"] = tuple(float(d) for d in section["retry_delays"])
    if "cooldown_seconds" in section:
        settings["cooldown_seconds"] = float(section["cooldown_seconds"])
    return settings
