"""``hermes doctor``: check what a deployment needs, one line per check, without spending tokens:
the configuration, secrets, the model key and endpoint, the bot tokens, the database."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agent.prompt_caching import caching_policy, caching_status_line
from agent.tokens import count_text_tokens
from gateway.cli.doctor_probes import FAIL, OK, WARN, probe_models
from gateway.config.prices import configured_limits, configured_models, unpriced_text
from gateway.config.schema import Config, database_url, mask_url
from gateway.platforms.registry import PLATFORMS

if TYPE_CHECKING:
    from gateway.store.repository_failover import FailoverState


def _secret_check(env_name: str, what: str) -> tuple[str, str]:
    if os.environ.get(env_name, "").strip():
        return OK, f"{what}: {env_name} is set"
    return FAIL, f"{what}: {env_name} is not set (export it or put it in .env)"


async def store_checks(url: str, failover: bool = False) -> list[tuple[str, str]]:
    """A write that changes nothing, how many updates were quarantined (a warning when any:
    someone should look at them) and, with ``failover``, who leads and the standbys seen."""
    from gateway.store.db import open_store
    from gateway.store.repository import Repository

    store = await open_store(url)
    try:
        repo = Repository(store)
        await repo.check_writable()
        count = await repo.count_dead_letters()
        state = await repo.failover_state() if failover else None
    finally:
        await store.close()
    checks = [(OK, "database writable"), _dead_letter_line(count)]
    return checks + (_failover_checks(state) if failover else [])


def _failover_checks(state: FailoverState | None) -> list[tuple[str, str]]:
    """The leader and the standbys seen; a warning when nobody leads now."""
    from gateway.reports.failover import failover_lines

    if state is None:
        return [(WARN, "failover: no gateway has joined the election on this database yet")]
    leader, standbys = failover_lines(state)
    return [(OK if state.lease.live else WARN, leader), (OK, standbys)]


def _dead_letter_line(count: int) -> tuple[str, str]:
    if count == 0:
        return OK, "quarantined updates: none"
    return WARN, (
        f"quarantined updates: {count} (updates that could not be parsed or recorded; "
        "kept raw with the reason in the dead_letters table)"
    )


def _price_checks(config: Config, summary_name: str) -> list[tuple[str, str]]:
    """One line per configured model: its window and where its prices come from. A model with
    no known price is a warning, or a failure when a spending limit is set (the daemon then
    refuses to start)."""
    limits = configured_limits(config)
    checks: list[tuple[str, str]] = []
    for model in configured_models(config, summary_name):
        info = model.info
        window = f"{info.context_length:,} tokens"
        if info.known:
            checks.append((OK, f"model {info.id}: {window}, prices from {info.price_source}"))
        elif limits:
            checks.append((FAIL, f"{unpriced_text(model)}: required by {', '.join(limits)}"))
        else:
            checks.append((WARN, f"{unpriced_text(model)}: its calls count as $0 ({window})"))
    return checks


async def run_doctor(config: Config) -> int:
    """Print the checks; exit 1 when any failed."""
    from gateway.store.db import upgrade_database

    checks: list[tuple[str, str]] = [(OK, f"configuration valid ({config.source})")]
    checks.append(_secret_check(config.model.api_key_env, "model API key"))
    checks.extend(await probe_models(config))
    for name, platform in PLATFORMS.sections(config).items():
        if platform.enabled:
            checks.append(_secret_check(platform.token_env, f"{name} bot token"))
            if not platform.allowed_users and not platform.allow_all:
                checks.append((WARN, f"{name}: allowed_users is empty, so everyone is refused"))
    for spec in PLATFORMS.enabled(config):
        if (check := await spec.check_token(config)) is not None:
            checks.append(check)
    from gateway.sessions.services import summary_model_choice

    checks.extend(_price_checks(config, summary_model_choice(config).name))
    policy = caching_policy(
        config.model.provider,
        config.model.name,
        config.model.base_url,
        config.prompt_caching.cache_ttl,
    )
    checks.append((OK, caching_status_line(policy)))
    checks.append((OK, summary_model_choice(config).status_line))
    try:
        count_text_tokens("offline tokenizer check")
        checks.append((OK, "tokenizer loads offline"))
    except OSError as exc:
        checks.append((FAIL, f"tokenizer: {exc}"))
    url = database_url(config)
    try:
        head = await upgrade_database(url)
        checks.append((OK, f"database {mask_url(url)} at revision {head}"))
        checks.extend(await store_checks(url, config.gateway.failover.enabled))
    except Exception as exc:  # any driver error is reported, not raised
        checks.append((FAIL, f"database {mask_url(url)}: {type(exc).__name__}: {exc}"))
    from gateway.cli.doctor_voice import voice_checks
    from gateway.cli.mcp import mcp_checks

    checks.extend(await mcp_checks(config))
    checks.extend(await voice_checks(config))
    for status, text in checks:
        print(f"[{status:>4}] {text}")
    return 1 if any(s == FAIL for s, _ in checks) else 0
