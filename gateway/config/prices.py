"""The configured models' facts with the operator's overrides, and whether each has a price.

Every model the daemon may call (``model.name``, each ``model.choices`` entry, the summary
model) is priced by its override in the configuration (``model.prices``,
``model.choices.<i>.prices``, ``auxiliary.compression.prices``), else by the ``genai-prices``
data, else not at all. A model with no price costs $0 in ``/usage``, so a spending limit
(``limits``) could never refuse anyone: :func:`check_prices` warns about such a model, and
refuses the configuration when a limit is set.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from agent.model_table import ModelInfo, lookup_model
from gateway.config.schema import Config, ConfigError, ModelChoice

log = logging.getLogger(__name__)

MAIN_PRICES_KEY = "model.prices"
SUMMARY_PRICES_KEY = "auxiliary.compression.prices"


@dataclass(frozen=True, slots=True)
class ConfiguredModel:
    """One model the configuration may call, where it is configured, and its facts."""

    where: str
    """The key naming it (``model.name``, ``model.choices.1``, ``auxiliary.compression``)."""
    prices_key: str
    """The key that sets its prices."""
    info: ModelInfo


def _entries(config: Config) -> list[tuple[ModelChoice, str, str]]:
    """(choice, where, prices key) of ``model.name`` and each distinct ``model.choices`` entry."""
    settings = config.model
    main = ModelChoice(
        name=settings.name,
        context_length=settings.context_length,
        vision=settings.vision,
        prices=settings.prices,
    )
    entries = [(main, "model.name", MAIN_PRICES_KEY)]
    for index, choice in enumerate(settings.choices):
        if choice.name != settings.name:
            entries.append((choice, f"model.choices.{index}", f"model.choices.{index}.prices"))
    return entries


def _info(choice: ModelChoice, prices_key: str) -> ModelInfo:
    price = choice.prices.list_price(prices_key) if choice.prices is not None else None
    info = lookup_model(choice.name, context_length_override=choice.context_length, price=price)
    return info if choice.vision is None else replace(info, vision=choice.vision)


def chat_models(config: Config) -> list[ConfiguredModel]:
    """``model.name`` and the ``model.choices`` entries, each with its overrides applied."""
    return [
        ConfiguredModel(where, key, _info(choice, key)) for choice, where, key in _entries(config)
    ]


def chat_model_info(config: Config, name: str) -> ModelInfo:
    """The facts of the configured chat model ``name`` (window, vision and prices overridden
    as configured); a name not configured gets the table's and the library's facts."""
    for model in chat_models(config):
        if model.info.id == name:
            return model.info
    return lookup_model(name)


def summary_model_info(config: Config, name: str) -> ModelInfo:
    """The summary model ``name`` priced by ``auxiliary.compression.prices``, else as the chat
    model of the same name is, else by the library."""
    aux = config.auxiliary.compression
    if aux.prices is not None:
        return lookup_model(name, price=aux.prices.list_price(SUMMARY_PRICES_KEY))
    return chat_model_info(config, name)


def configured_models(config: Config, summary_name: str) -> list[ConfiguredModel]:
    """Every model the daemon may call: the chat models, then the summary model
    (``summary_name``) unless it is a chat model priced as such."""
    models = chat_models(config)
    names = {model.info.id for model in models}
    if summary_name not in names or config.auxiliary.compression.prices is not None:
        info = summary_model_info(config, summary_name)
        models.append(ConfiguredModel("auxiliary.compression", SUMMARY_PRICES_KEY, info))
    return models


def unpriced_text(model: ConfiguredModel) -> str:
    """What to tell the operator about a model with no known price."""
    return (
        f"{model.where}: no known price for model {model.info.id!r}; set {model.prices_key} "
        "(input_per_mtok, output_per_mtok)"
    )


def configured_limits(config: Config) -> list[str]:
    """The spending limits that are set, by key."""
    limits = config.limits
    return [
        f"limits.{key}"
        for key, value in (
            ("daily_usd_per_user", limits.daily_usd_per_user),
            ("monthly_usd_total", limits.monthly_usd_total),
        )
        if value is not None
    ]


def check_prices(config: Config, summary_name: str) -> None:
    """Warn (log) about each configured model with no known price; raise ConfigError naming
    the keys to set when a spending limit is configured, since its calls would count as $0."""
    unpriced = [m for m in configured_models(config, summary_name) if not m.info.known]
    if not unpriced:
        return
    limits = configured_limits(config)
    if limits:
        raise ConfigError(
            "; ".join(unpriced_text(m) for m in unpriced)
            + f" ({' and '.join(limits)} cannot count what an unpriced model costs)"
        )
    for model in unpriced:
        log.warning("%s: its calls count as $0 in /usage", unpriced_text(model))
