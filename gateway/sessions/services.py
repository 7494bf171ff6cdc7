"""The process-wide parts every session shares: providers, the auxiliary client, model facts.

Built once from the configuration by :func:`build_services`; sessions get their own context
engine and agent loop on top of these.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.auxiliary import AuxiliaryClient, AuxiliaryRoute
from agent.model_table import ModelInfo, cost_usd, lookup_model, pricing_for_call, writes_by_tier
from agent.prompt_caching import CachePolicy, caching_status_line
from agent.providers import build_provider
from agent.providers.base import Provider
from agent.session import (
    SUMMARY_SDK_RETRIES,
    ElapsedTime,
    PolicySettings,
    SessionSettings,
    SummaryModelChoice,
    choose_summary_model,
)
from agent.spans import NO_SPANS, Spans
from agent.tools.mcp import McpToolProvider
from agent.types import Usage
from gateway.config.prices import chat_model_info, check_prices, summary_model_info
from gateway.config.schema import Config, hermes_home, require_secret
from gateway.jobs.board import JobBoard
from gateway.jobs.clock import JobClock
from gateway.sessions.model_choice import ModelChoices
from gateway.store.archive import StoreArchive
from gateway.store.ports import ServicesStore, SessionStore

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The project folder (its ``plugins/context_engine/`` is searched first for engines)."""


@dataclass(slots=True)
class Billing:
    """Whose model calls a session's are: the session, and the user of the turn it runs.

    One per loaded session, handed to its recorder and to its engine's summary calls when they
    are built; the session sets :attr:`user_key` at the start of each turn."""

    session_id: int | None = None
    user_key: str | None = None
    """``platform:user_id`` of the user whose message the session answers now."""


@dataclass(slots=True)
class AgentServices:
    """Shared, long-lived parts: one per process."""

    config: Config
    repo: ServicesStore
    """The store as the sessions and the commands use it (:mod:`gateway.store.ports`)."""
    provider: Provider
    model: ModelInfo
    auxiliary: AuxiliaryClient
    cache_policy: CachePolicy
    models: ModelChoices
    """Every model a session may use (``/model``); ``model``/``provider`` are the default's."""
    project_root: Path = PROJECT_ROOT
    home: Path = field(default_factory=hermes_home)
    elapsed: ElapsedTime = field(default_factory=ElapsedTime)
    tool_providers: list[McpToolProvider] = field(default_factory=list)
    """Tools beyond the built-ins every session offers (the MCP servers')."""
    spans: Spans = NO_SPANS
    """Where each turn's model calls, tool calls and compactions are traced (none: no-op)."""
    """How session clocks measure the time since a session's newest message (the idle timer)."""
    jobs: JobBoard | None = None
    """Scheduled jobs (None: ``jobs.enabled`` is off): the ``schedule`` tool adds to it."""

    @property
    def context_length(self) -> int:
        return self.model.context_length

    @property
    def archive(self) -> StoreArchive:
        """The store as context engines see it."""
        return StoreArchive(self.repo.store)

    @property
    def caching_line(self) -> str:
        return caching_status_line(self.cache_policy)

    @property
    def summary_model(self) -> ModelInfo:
        """The summary model's facts (prices, overrides applied), for the context policy."""
        return summary_model_info(self.config, self.auxiliary.route("compression").model)

    @property
    def policy_settings(self) -> PolicySettings:
        """The context policy's switches from the configuration."""
        compression = self.config.compression
        return PolicySettings(
            cold_start=compression.enabled and compression.cold_start == "auto",
            idle=compression.enabled and compression.idle == "auto",
            threshold_in_background=compression.threshold_in_background == "auto",
            prune_consumed=compression.enabled and compression.prune_tail == "auto",
            cache_ttl=self.config.prompt_caching.cache_ttl,
            caching_enabled=self.cache_policy.enabled,
        )

    @property
    def session_settings(self) -> SessionSettings:
        """What every session's agent is built with from the configuration."""
        config = self.config
        return SessionSettings(
            system_prompt=config.agent.system_prompt,
            max_tokens=config.model.max_tokens,
            max_iterations=config.agent.max_iterations,
            compression_enabled=config.compression.enabled,
            policy=self.policy_settings,
            summary_model=self.summary_model,
        )

    @property
    def summary_line(self) -> str:
        """Which model writes summaries and why, for ``/status`` and the start-up log."""
        return summary_model_choice(self.config).status_line

    async def aclose(self) -> None:
        await self.auxiliary.aclose()
        await self.models.aclose()
        await self.provider.aclose()


def main_provider(config: Config) -> Provider:
    """The main model's provider. Raises ``MissingSecretError`` for a missing key."""
    settings = config.model
    api_key = require_secret(
        settings.api_key_env, f"the API key for model.provider={settings.provider}"
    )
    return build_provider(
        settings.provider,
        model=settings.name,
        api_key=api_key,
        base_url=settings.base_url,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
    )


def summary_provider(config: Config) -> Provider:
    """The provider summaries go to, with a client of its own even on the main endpoint: the
    SDK must not retry summary calls (the compressor's retries are their one layer). Raises
    ``MissingSecretError`` for a missing key."""
    aux = config.auxiliary.compression
    kind = config.model.provider if aux.provider == "auto" else aux.provider
    same_endpoint = aux.provider == "auto" and aux.base_url is None
    key_env = aux.api_key_env if aux.api_key_env and not same_endpoint else config.model.api_key_env
    return build_provider(
        kind,
        model=summary_model_choice(config).name,
        api_key=require_secret(key_env, f"the API key for auxiliary.compression ({kind})"),
        base_url=aux.base_url or config.model.base_url,
        timeout=aux.timeout,
        max_retries=SUMMARY_SDK_RETRIES,
    )


def _auxiliary(config: Config, main: Provider, repo: SessionStore) -> AuxiliaryClient:
    summary = summary_model_info(config, summary_model_choice(config).name)
    main_info = chat_model_info(config, config.model.name)

    async def on_usage(task: str, provider_name: str, usage: Usage, billed_to: object) -> None:
        billing = billed_to if isinstance(billed_to, Billing) else Billing()
        configured = summary if task == "compression" else main_info
        info = pricing_for_call(usage.model, configured)

        # Summary requests carry no cache breakpoints: the tier only matters for a fixed 1h.
        tier = "1h" if config.prompt_caching.cache_ttl == "1h" else "5m"
        await repo.record_usage(
            billing.session_id,
            usage,
            provider=provider_name,
            cost_usd=cost_usd(info, usage, tier),
            cache_write_1h_tokens=writes_by_tier(usage, tier)[1],
            purpose=task,
            user_key=billing.user_key,
        )

    aux = config.auxiliary.compression
    model_name = summary_model_choice(config).name
    provider = summary_provider(config)
    context_length = aux.context_length or lookup_model(model_name).context_length
    route = AuxiliaryRoute(provider, model_name, timeout=aux.timeout, context_length=context_length)
    return AuxiliaryClient(
        default=AuxiliaryRoute(main, config.model.name),
        routes={"compression": route},
        on_usage=on_usage,
    )


def summary_model_choice(config: Config) -> SummaryModelChoice:
    """The model that writes summaries: ``auxiliary.compression.model``, else auto-detected
    on the provider the summaries go to."""
    aux = config.auxiliary.compression
    provider = config.model.provider if aux.provider == "auto" else aux.provider
    return choose_summary_model(
        aux.model,
        config.model.name,
        provider,
        main_context_length=config.model.context_length,
    )


def build_services(
    config: Config,
    repo: ServicesStore,
    tool_providers: Sequence[McpToolProvider] = (),
    spans: Spans = NO_SPANS,
    job_clock: JobClock | None = None,
) -> AgentServices:
    """Build the providers and auxiliary client.

    Logs a warning for each configured model with no known price; raises ``ConfigError``
    naming the key to set when a spending limit needs one, and ``MissingSecretError`` for a
    missing key.
    """
    check_prices(config, summary_model_choice(config).name)
    provider = main_provider(config)
    models = ModelChoices(config, provider)
    default = models.get(None)
    return AgentServices(
        config=config,
        repo=repo,
        provider=provider,
        model=default.info,
        auxiliary=_auxiliary(config, provider, repo),
        cache_policy=default.cache_policy,
        models=models,
        tool_providers=list(tool_providers),
        spans=spans,
        jobs=JobBoard(repo, config.jobs, job_clock) if config.jobs.enabled else None,
    )
