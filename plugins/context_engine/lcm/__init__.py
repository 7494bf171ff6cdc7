"""Lossless context management (``context.engine: lcm``).

Every message stays stored verbatim; old turns are summarised into a DAG of summary nodes
(leaves over chunks of messages, condensed nodes over several nodes below), the context shows
the root nodes and a fresh tail, and the model gets ``lcm_grep``, ``lcm_describe`` and
``lcm_expand`` to search and reopen anything that was summarised. Settings: ``context.lcm``.
"""

from __future__ import annotations

from agent.engines.context_engine import ContextEngine, EngineContext

from .config import load_settings
from .engine import LcmEngine
from .store import LcmStore

__all__ = ["LcmEngine", "create_engine"]


def create_engine(ctx: EngineContext) -> ContextEngine:
    """Build the engine for one session from the host's context (needs its archive)."""
    if ctx.archive is None:
        raise RuntimeError("the lcm engine needs the host's message archive (ctx.archive)")
    settings = load_settings(ctx.engine_config, ctx.context_length, ctx.summary_context_length)
    return LcmEngine(
        context_length=ctx.context_length,
        settings=settings,
        store=LcmStore(ctx.archive),
        call_llm=ctx.call_llm,
        summary_context_length=ctx.summary_context_length,
        enabled=ctx.enabled,
        collect_durable_facts=ctx.collect_durable_facts,
    )
