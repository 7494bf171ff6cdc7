"""A session's context engine, built from the configuration for the session's model window."""

from __future__ import annotations

from agent.engine_loader import load_context_engine
from agent.engines.context_engine import ContextEngine, EngineContext
from agent.session import SessionClock
from gateway.sessions.services import AgentServices, Billing


def build_engine(
    services: AgentServices,
    name: str,
    clock: SessionClock | None = None,
    context_length: int | None = None,
    billing: Billing | None = None,
    *,
    has_memory: bool = False,
) -> ContextEngine:
    """The configured context engine for one session, deciding on ``clock``'s time, for a
    window of ``context_length`` tokens (the session's model; default: the configured one);
    its summaries are billed to ``billing`` (the session and the user of its turn). A session
    that ``has_memory`` gets durable facts from its compactions (``memory.flush_on_compaction``)."""
    config = services.config
    route = services.auxiliary.route("compression")
    ctx = EngineContext(
        context_length=context_length or services.context_length,
        call_llm=services.auxiliary.bound(billing or Billing()),
        threshold=config.compression.threshold,
        target_ratio=config.compression.target_ratio,
        protect_last_n=config.compression.protect_last_n,
        prune_tail=config.compression.prune_tail == "auto",
        enabled=config.compression.enabled,
        engine_config=config.context.engine_section(name),
        summary_context_length=route.context_length,
        archive=services.archive,
        clock=(clock or SessionClock()).now,
        collect_durable_facts=has_memory and config.memory.flush_on_compaction,
    )
    return load_context_engine(
        name, ctx, project_root=services.project_root, hermes_home=services.home
    )
