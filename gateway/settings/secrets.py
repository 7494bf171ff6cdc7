"""The configuration's errors, and secrets read from the environment (or ``.env``).

Below the configuration schema, so the platform registry and adapters can raise and read them
without importing the whole schema.
"""

from __future__ import annotations

import os


class ConfigError(Exception):
    """The configuration is invalid; the message names the key path and the problem."""


class MissingSecretError(ConfigError):
    """A required secret is not set in the environment or ``.env``."""


def require_secret(env_name: str, what: str) -> str:
    """The value of a secret's environment variable, or a clear error naming it."""
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise MissingSecretError(
            f"{what} is not set: export {env_name}=... or put it in a .env file"
        )
    return value
