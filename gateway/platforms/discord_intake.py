"""What the Discord adapter decides about received messages and a lost connection.

Pure functions over discord.py's typed models: which non-text content a message carries, and
what it means when discord.py's connection task ended (it reconnects by itself and gives up only
for good reasons: a rejected token, missing intents, a bad shard or version).
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # discord.py imports audioop on 3.11
    import discord

INTENT_HELP = (
    "discord: the bot's Message Content intent is not enabled, so it cannot read messages. "
    "Enable it in the Discord Developer Portal (your application -> Bot -> Privileged Gateway "
    "Intents -> Message Content Intent), then start the gateway again."
)


HAND_OVER_ATTEMPTS = 3
"""Tries to record a message before it is quarantined (Discord never delivers it again)."""
HAND_OVER_RETRY_SECONDS = 0.5
"""Pause before the second try; doubled before each further one."""
AUTHENTICATION_FAILED = 4004
FATAL_CLOSE_CODES = {
    4004: "authentication failed",
    4010: "invalid shard",
    4011: "sharding required",
    4012: "invalid API version",
    4013: "invalid intents",
}
"""Gateway close codes after which discord.py gives up (4014, missing intents, has its own)."""


def connection_failure(error: BaseException | None, token_env: str) -> str:
    """Why the adapter stopped, given how discord.py's connection task ended."""
    if isinstance(error, discord.PrivilegedIntentsRequired):
        return INTENT_HELP
    if isinstance(error, discord.ConnectionClosed) and error.code == AUTHENTICATION_FAILED:
        return token_rejected_text(token_env)
    if isinstance(error, discord.ConnectionClosed) and error.code in FATAL_CLOSE_CODES:
        return f"Discord closed the gateway: {FATAL_CLOSE_CODES[error.code]}"
    if error is None:
        return "the Discord connection was closed"
    return f"the Discord connection ended ({type(error).__name__})"


def token_rejected_text(env_name: str) -> str:
    """The one ERROR line for a rejected Discord token: names the variable, never the value."""
    return (
        f"Discord rejected the bot token in {env_name} (401 / 4004: reset or wrong). "
        f"Put the bot's current token from the Developer Portal in {env_name} and restart."
    )


def attachment_kinds(message: discord.Message) -> tuple[str, ...]:
    """What the message carries besides text: "image", "voice", "video", "sticker", ..."""
    kinds: list[str] = []
    for item in message.attachments:
        content_type = (item.content_type or "").split("/", 1)[0]
        if item.is_voice_message():
            kinds.append("voice")
        elif content_type in {"image", "audio", "video"}:
            kinds.append(content_type)
        else:
            kinds.append("document")
    kinds.extend("sticker" for _ in message.stickers)
    return tuple(kinds)
