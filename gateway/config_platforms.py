"""The platforms' settings (``platforms.<name>``): what every platform has, and each one's own."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from gateway.config_base import _Section


class PlatformSection(_Section):
    """What every platform's settings (``platforms.<name>``) have: whether it runs, the
    environment variable of its token, who may talk to the bot and who administers it."""

    enabled: bool = False
    token_env: str
    allowed_users: list[int | str] = Field(default_factory=list)
    allow_all: bool = False
    admin_users: list[int | str] = Field(default_factory=list)
    typing_delay: Annotated[float, Field(ge=0)] = 0.5
    streaming: bool = True
    """Show replies while the model writes them (drafts or edited messages, see
    :mod:`gateway.live_reply`); off: each reply arrives whole when it is finished."""

    def secret_env_names(self) -> list[str]:
        """The environment variables this platform takes secrets from (masked in logs)."""
        return [self.token_env]


class TelegramSettings(PlatformSection):
    token_env: str = "TELEGRAM_BOT_TOKEN"
    base_url: str | None = None
    base_file_url: str | None = None
    per_user_sessions_in_groups: bool = False
    poll_timeout: Annotated[int, Field(ge=1, le=50)] = 30
    watchdog_seconds: Annotated[float, Field(gt=0)] = 120.0
    rate_limit_per_second: Annotated[float, Field(ge=0)] = 30.0
    rate_limit_per_group_per_minute: Annotated[float, Field(ge=0)] = 20.0
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = Field(default=None, validate_default=True)
    webhook_listen: str = "127.0.0.1"
    webhook_port: Annotated[int, Field(ge=0, le=65535)] = 8443
    webhook_path: str = "/telegram"
    webhook_secret_env: str = "TELEGRAM_WEBHOOK_SECRET"

    def secret_env_names(self) -> list[str]:
        """The bot token's variable and the webhook secret's."""
        return [self.token_env, self.webhook_secret_env]

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url_for_webhook_mode(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("mode") == "webhook" and not value:
            raise ValueError(
                'is required when mode is "webhook" (the public URL Telegram posts to)'
            )
        if value and not value.startswith(("https://", "http://")):
            raise ValueError(f"must be an http(s) URL (got {value!r})")
        return value

    @field_validator("webhook_path")
    @classmethod
    def _webhook_path_absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"must start with / (got {value!r})")
        return value


class DiscordSettings(PlatformSection):
    token_env: str = "DISCORD_BOT_TOKEN"
    api_base_url: str | None = None
    gateway_url: str | None = None
    require_mention: bool = True
    catch_up_messages: Annotated[int, Field(ge=0, le=1000)] = 50


class PlatformSettings(_Section):
    """One section per platform, each a :class:`PlatformSection` named as its platform is in
    :mod:`gateway.platforms.registry`."""

    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    discord: DiscordSettings = Field(default_factory=DiscordSettings)
