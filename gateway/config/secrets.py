"""The secrets the configuration names (and any written into it), handed to the log sanitizer
(:mod:`gateway.text.redaction`) before anything is logged."""

from __future__ import annotations

import os

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from gateway.config.masking import literal_secrets
from gateway.config.schema import Config
from gateway.platforms.registry import PLATFORMS
from gateway.settings.mcp import mcp_secret_env_names
from gateway.settings.web import web_secret_env_names
from gateway.text.redaction import LogSanitizer, install_sanitizer


def configured_secret_env_names(config: Config) -> set[str]:
    """The environment variables the configuration takes secrets from."""
    names = {config.model.api_key_env}
    for section in PLATFORMS.sections(config).values():
        names.update(section.secret_env_names())
    names.update(mcp_secret_env_names(config.mcp))
    names.update(web_secret_env_names(config.web))
    auxiliary = config.auxiliary.compression.api_key_env
    if auxiliary:
        names.add(auxiliary)
    return names


def _database_password(config: Config) -> list[str]:
    """The password in ``database.url``, if it has one (drivers may log the URL)."""
    if not config.database.url:
        return []
    try:
        password = make_url(config.database.url).password
    except ArgumentError:
        return []
    return [str(password)] if password else []


def install_log_sanitizer(config: Config) -> LogSanitizer:
    """Mask the configured secrets in every log record from now on; safe to call repeatedly."""
    values = [os.environ.get(name, "") for name in configured_secret_env_names(config)]
    return install_sanitizer([*values, *_database_password(config), *literal_secrets(config)])
