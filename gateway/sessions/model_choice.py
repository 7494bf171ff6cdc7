"""The models a chat may talk to: ``model.name`` and ``model.choices``, one provider each.

``/model NAME`` stores the name with the session; every part that depends on the model (the
provider's requests, the context window the engine and hygiene compact against, the prompt
caching decision, the prices usage is recorded at (``gateway/config/prices.py``), whether photos
reach it) is then taken from :class:`SessionModel`. Every choice uses the main model's
provider, endpoint and key; its provider is built on first use and kept for the process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agent.model_table import ModelInfo
from agent.prompt_caching import CachePolicy, caching_policy
from agent.providers import build_provider
from agent.providers.base import Provider
from gateway.config.prices import chat_model_info
from gateway.config.schema import Config, ModelChoice, require_secret

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionModel:
    """One model as a session uses it."""

    info: ModelInfo
    provider: Provider
    cache_policy: CachePolicy

    @property
    def name(self) -> str:
        return self.info.id

    @property
    def context_length(self) -> int:
        return self.info.context_length


class UnknownModelError(ValueError):
    """A model that is not among the configured choices (the message lists them)."""


class ModelChoices:
    """The configured models, in the order ``/model`` lists them (the default first)."""

    def __init__(self, config: Config, default_provider: Provider) -> None:
        settings = config.model
        self._config = config
        default = ModelChoice(
            name=settings.name, context_length=settings.context_length, vision=settings.vision
        )
        listed = [choice for choice in settings.choices if choice.name != settings.name]
        self._choices = {choice.name: choice for choice in [default, *listed]}
        self.default_name = settings.name
        self._built: dict[str, SessionModel] = {
            settings.name: self._session_model(default, default_provider)
        }

    @property
    def names(self) -> list[str]:
        return list(self._choices)

    def info(self, name: str) -> ModelInfo:
        """The model's facts with the configured overrides (window, vision, prices)."""
        return chat_model_info(self._config, self._choice(name).name)

    def resolve(self, name: str) -> str:
        """The configured name ``name`` means (ignoring case); raises UnknownModelError."""
        wanted = name.strip().lower()
        for known in self._choices:
            if known.lower() == wanted:
                return known
        raise UnknownModelError(
            f"Unknown model {name.strip()!r}. Choose one of: {', '.join(self._choices)}."
        )

    def get(self, name: str | None) -> SessionModel:
        """The model a session stored (None, or one no longer configured: the default)."""
        if name is None or name not in self._choices:
            if name is not None:
                log.warning("model %s is no longer configured; using %s", name, self.default_name)
            name = self.default_name
        built = self._built.get(name)
        if built is None:
            built = self._built[name] = self._session_model(self._choice(name), None)
        return built

    def _choice(self, name: str) -> ModelChoice:
        return self._choices[self.resolve(name)]

    def _session_model(self, choice: ModelChoice, provider: Provider | None) -> SessionModel:
        settings = self._config.model
        if provider is None:
            provider = build_provider(
                settings.provider,
                model=choice.name,
                api_key=require_secret(
                    settings.api_key_env, f"the API key for model.provider={settings.provider}"
                ),
                base_url=settings.base_url,
                timeout=settings.timeout,
                max_retries=settings.max_retries,
            )
        policy = caching_policy(
            settings.provider, choice.name, settings.base_url, self._config.prompt_caching.cache_ttl
        )
        return SessionModel(self.info(choice.name), provider, policy)

    async def aclose(self) -> None:
        """Close the providers built for choices other than the default (the services own
        the default's)."""
        for name, model in self._built.items():
            if name != self.default_name:
                await model.provider.aclose()
