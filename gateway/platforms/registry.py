"""The platforms the gateway can serve, each registered once: name, settings, adapter.

A :class:`PlatformSpec` names a platform (its session keys, inbound rows and
``platforms.<name>`` settings section), its settings model (a
:class:`~gateway.settings.sections.PlatformSection`; the common settings alone when it has none of
its own) and where its adapter class lives. The configuration's ``platforms`` section is built
from this registry (:meth:`PlatformRegistry.settings_model`), so a platform's settings are
validated, documented by their errors (``platforms.<name>.<key>: ...``) and defaulted like every
other section. The adapter's module is imported only when the platform is enabled, so
``hermes --help`` and a Telegram-only daemon never import discord.py: keep a settings model
that lives apart from its adapter free of the platform's client library.

The runner asks the registry, never a platform by name: :meth:`PlatformRegistry.build_adapters`
for the enabled adapters, :meth:`PlatformRegistry.sections` for every platform's allowlist and
admins. What an adapter can do beyond the basics (catch up on messages sent while it was
offline, find a reply part a crash left in doubt) is part of the adapter contract
(:class:`~gateway.platforms.base.PlatformAdapter`), answered by the adapter itself.

Adding a platform: its adapter module (with its settings model, or beside it), and one
registration below.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field, create_model

from gateway.platforms.discord.settings import DiscordSettings
from gateway.platforms.telegram.settings import TelegramSettings
from gateway.settings.media import MediaSettings
from gateway.settings.secrets import require_secret
from gateway.settings.sections import PlatformSection, Section

if TYPE_CHECKING:
    from gateway.platforms.base import AdapterHooks, PlatformAdapter


class Config(Protocol):
    """What the registry reads of the configuration (the schema builds its ``platforms``
    section from this registry, so the registry names only these two sections)."""

    @property
    def platforms(self) -> object:
        """One settings section per registered platform, by name."""

    @property
    def media(self) -> MediaSettings:
        """The ``media`` section, which adapters take for their download limits."""


@dataclass(frozen=True, slots=True)
class PlatformSpec:
    """One platform: its name and where its adapter class is."""

    name: str
    """As in session keys, the inbound table and ``platforms.<name>`` in config.yaml."""
    title: str
    """How people write the platform's name ("Telegram"), for messages."""
    adapter: str
    """``"module:Class"`` of the adapter, constructed as ``Class(settings, token, media,
    hooks)`` (``media``: the ``media`` section of the config; ``hooks``: the runner's
    :class:`~gateway.platforms.base.AdapterHooks`)."""
    probe: str | None = None
    """``"module:function"`` of its ``hermes doctor`` check, an ``async (settings, token) ->
    (status, line)`` that asks the platform whether the token works, spending nothing."""
    settings_class: type[PlatformSection] | None = None
    """Its ``platforms.<name>`` model; None: the common settings, the token in
    ``<NAME>_BOT_TOKEN``."""

    @property
    def settings_model(self) -> type[PlatformSection]:
        """The model of the platform's ``platforms.<name>`` section."""
        return self.settings_class or common_settings_model(self.name)

    def settings(self, config: Config) -> PlatformSection:
        """The platform's section of the configuration."""
        section = getattr(config.platforms, self.name, None)
        if not isinstance(section, PlatformSection):
            raise LookupError(f"platforms.{self.name} is not a platform section of the config")
        return section

    def build_adapter(self, config: Config, hooks: AdapterHooks | None = None) -> PlatformAdapter:
        """Import the adapter's module and construct it with the runner's ``hooks``; reads the
        token from the environment (:class:`~gateway.config.schema.MissingSecretError` when
        it is not set)."""
        settings = self.settings(config)
        token = require_secret(settings.token_env, f"the {self.title} bot token")
        module_name, class_name = self.adapter.split(":")
        adapter_class = getattr(importlib.import_module(module_name), class_name)
        adapter: PlatformAdapter = adapter_class(settings, token, config.media, hooks)
        return adapter

    async def check_token(self, config: Config) -> tuple[str, str] | None:
        """The platform's own check of its token (None: no check, or no token set)."""
        settings = self.settings(config)
        token = os.environ.get(settings.token_env, "").strip()
        if self.probe is None or not token:
            return None
        module_name, function_name = self.probe.split(":")
        probe = getattr(importlib.import_module(module_name), function_name)
        result: tuple[str, str] = await probe(settings, token)
        return result


class PlatformRegistry:
    """The platforms the gateway knows, in registration order."""

    def __init__(self) -> None:
        self._specs: dict[str, PlatformSpec] = {}

    def register(self, spec: PlatformSpec) -> None:
        """Add a platform; a name registered twice is a programming error."""
        if spec.name in self._specs:
            raise ValueError(f"platform {spec.name!r} is already registered")
        self._specs[spec.name] = spec

    def __iter__(self) -> Iterator[PlatformSpec]:
        return iter(self._specs.values())

    def names(self) -> list[str]:
        """Every registered platform's name."""
        return list(self._specs)

    def settings_model(self) -> type[Section]:
        """The configuration's ``platforms`` section: one field per registered platform, its
        settings model, defaulted (the same class until a registration changes)."""
        return _platforms_model(tuple((spec.name, spec.settings_model) for spec in self))

    def sections(self, config: Config) -> dict[str, PlatformSection]:
        """Every registered platform's settings, enabled or not, by name."""
        return {spec.name: spec.settings(config) for spec in self}

    def enabled(self, config: Config) -> list[PlatformSpec]:
        """The platforms the configuration enables."""
        return [spec for spec in self if spec.settings(config).enabled]

    def build_adapters(
        self, config: Config, hooks: Callable[[str], AdapterHooks] | None = None
    ) -> list[PlatformAdapter]:
        """The adapters of every enabled platform (reads their tokens from the environment),
        each built with ``hooks(name)``."""
        return [
            spec.build_adapter(config, hooks(spec.name) if hooks else None)
            for spec in self.enabled(config)
        ]


@cache
def common_settings_model(name: str) -> type[PlatformSection]:
    """The settings of a platform with none of its own: the common ones, the token's variable
    defaulting to ``<NAME>_BOT_TOKEN``."""
    token_env: Any = (str, f"{name.upper()}_BOT_TOKEN")
    return create_model(f"{name.title()}Settings", __base__=PlatformSection, token_env=token_env)


@cache
def _platforms_model(models: tuple[tuple[str, type[PlatformSection]], ...]) -> type[Section]:
    fields: dict[str, Any] = {name: (model, Field(default_factory=model)) for name, model in models}
    return create_model(
        "PlatformSettings",
        __base__=Section,
        __doc__="One section per registered platform (``platforms.<name>``).",
        **fields,
    )


PLATFORMS = PlatformRegistry()
"""The platforms of this gateway; one registration per platform module."""
PLATFORMS.register(
    PlatformSpec(
        "telegram",
        "Telegram",
        "gateway.platforms.telegram.adapter:TelegramAdapter",
        probe="gateway.cli.doctor_probes:probe_telegram",
        settings_class=TelegramSettings,
    )
)
PLATFORMS.register(
    PlatformSpec(
        "discord",
        "Discord",
        "gateway.platforms.discord.adapter:DiscordAdapter",
        probe="gateway.cli.doctor_probes:probe_discord",
        settings_class=DiscordSettings,
    )
)
