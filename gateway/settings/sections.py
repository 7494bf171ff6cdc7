"""The base classes of configuration sections, in a module of their own so that a platform's
settings model can live beside the platform (``gateway/platforms/<name>_settings.py``) without
importing the whole configuration schema (:mod:`gateway.config.schema` builds ``platforms.*``
from the platform registry, which imports those models)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Section(BaseModel):
    """A configuration section: unknown keys are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PlatformSection(Section):
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
    :mod:`gateway.delivery.live_reply`); off: each reply arrives whole when it is finished."""

    def secret_env_names(self) -> list[str]:
        """The environment variables this platform takes secrets from (masked in logs)."""
        return [self.token_env]
