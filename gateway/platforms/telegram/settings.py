"""Telegram's settings (``platforms.telegram``), registered with the platform in
:mod:`gateway.platforms.registry`; kept apart from the adapter so that loading the
configuration never imports python-telegram-bot."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from gateway.settings.sections import PlatformSection


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
