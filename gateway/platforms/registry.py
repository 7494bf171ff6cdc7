"""The platforms the gateway can serve, each registered once: name, settings, adapter.

A :class:`PlatformSpec` names a platform (its session keys, inbound rows and
``platforms.<name>`` settings section, a :class:`~gateway.config.PlatformSection`) and where its
adapter class lives. The adapter's module is imported only when the platform is enabled, so
``hermes --help`` and a Telegram-only daemon never import discord.py.

The runner asks the registry, never a platform by name: :meth:`PlatformRegistry.build_adapters`
for the enabled adapters, :meth:`PlatformRegistry.sections` for every platform's allowlist and
admins. What an adapter can do beyond the basics (catch up on messages sent while it was
offline, find a reply part a crash left in doubt) is part of the adapter contract
(:class:`~gateway.platforms.base.PlatformAdapter`), answered by the adapter itself.

Adding a platform: its settings model (a :class:`~gateway.config.PlatformSection` field of
:class:`~gateway.config.PlatformSettings`), its adapter module, and one line below.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.config import Config, PlatformSection

if TYPE_CHECKING:
    from gateway.platforms.base import PlatformAdapter


@dataclass(frozen=True, slots=True)
class PlatformSpec:
    """One platform: its name and where its adapter class is."""

    name: str
    """As in session keys, the inbound table and ``platforms.<name>`` in config.yaml."""
    title: str
    """How people write the platform's name ("Telegram"), for messages."""
    adapter: str
    """``"module:Class"`` of the adapter, constructed as ``Class(settings, token, media)``
    (``media``: the ``media`` section of the config)."""
    probe: str | None = None
    """``"module:function"`` of its ``hermes doctor`` check, an ``async (settings, token) ->
    (status, line)`` that asks the platform whether the token works, spending nothing."""

    def settings(self, config: Config) -> PlatformSection:
        """The platform's section of the configuration."""
        section = getattr(config.platforms, self.name, None)
        if not isinstance(section, PlatformSection):
            raise LookupError(f"platforms.{self.name} is not a platform section of the config")
        return section

    def build_adapter(self, config: Config) -> PlatformAdapter:
        """Import the adapter's module and construct it; reads the token from the environment
        (:class:`~gateway.config.MissingSecretError` when it is not set)."""
        from gateway.config import require_secret

        settings = self.settings(config)
        token = require_secret(settings.token_env, f"the {self.title} bot token")
        module_name, class_name = self.adapter.split(":")
        adapter_class = getattr(importlib.import_module(module_name), class_name)
        adapter: PlatformAdapter = adapter_class(settings, token, config.media)
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

    def sections(self, config: Config) -> dict[str, PlatformSection]:
        """Every registered platform's settings, enabled or not, by name."""
        return {spec.name: spec.settings(config) for spec in self}

    def enabled(self, config: Config) -> list[PlatformSpec]:
        """The platforms the configuration enables."""
        return [spec for spec in self if spec.settings(config).enabled]

    def build_adapters(self, config: Config) -> list[PlatformAdapter]:
        """The adapters of every enabled platform (reads their tokens from the environment)."""
        return [spec.build_adapter(config) for spec in self.enabled(config)]


PLATFORMS = PlatformRegistry()
"""The platforms of this gateway; one registration per platform module."""
PLATFORMS.register(
    PlatformSpec(
        "telegram",
        "Telegram",
        "gateway.platforms.telegram:TelegramAdapter",
        probe="gateway.doctor_probes:probe_telegram",
    )
)
PLATFORMS.register(
    PlatformSpec(
        "discord",
        "Discord",
        "gateway.platforms.discord:DiscordAdapter",
        probe="gateway.doctor_probes:probe_discord",
    )
)
