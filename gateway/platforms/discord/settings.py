"""Discord's settings (``platforms.discord``), registered with the platform in
:mod:`gateway.platforms.registry`; kept apart from the adapter so that loading the
configuration never imports discord.py."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from gateway.settings.sections import PlatformSection


class DiscordSettings(PlatformSection):
    token_env: str = "DISCORD_BOT_TOKEN"
    api_base_url: str | None = None
    gateway_url: str | None = None
    require_mention: bool = True
    catch_up_messages: Annotated[int, Field(ge=0, le=1000)] = 50
