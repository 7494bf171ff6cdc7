"""What the Discord adapter decides about received messages, bad events and a lost connection.

Which non-text content a message carries; what it means when discord.py's connection task
ended (it reconnects by itself and gives up only for good reasons: a rejected token, missing
intents, a bad shard or version); and a guard around discord.py's event parsers, which would
otherwise let one event they cannot parse (a MESSAGE_CREATE without its author) end the whole
connection.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from typing import Any

from tenacity import RetryCallState, retry_if_exception_type, stop_after_attempt

from agent.retries import doubling, last_failure, retried
from gateway.messages.inbound import InboundMessage
from gateway.messages.quarantine import DeadLetter, QuarantineCallback

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # discord.py imports audioop on 3.11
    import discord

log = logging.getLogger(__name__)

PLATFORM = "discord"
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


def message_summary(message: discord.Message) -> dict[str, Any]:
    """What is kept of a message that could not be handled; never raises, even for a message
    discord.py built from an incomplete event (one without its author, say)."""

    def text_of(*path: str) -> str:
        value: Any = message
        for name in path:
            value = getattr(value, name, None)
        return "" if value is None else str(value)

    try:
        kinds = list(attachment_kinds(message))
    except Exception:  # the attachments are what is broken
        kinds = []
    return {
        "id": text_of("id"),
        "channel_id": text_of("channel", "id"),
        "author_id": text_of("author", "id"),
        "content": text_of("content"),
        "attachments": kinds,
    }


EventParser = Callable[[Any], None]
ParseFailure = Callable[[str, Any, Exception], None]
"""Told (event name, raw event data, error) when discord.py could not parse an event."""


def guard_parsers(parsers: MutableMapping[str, EventParser], on_failure: ParseFailure) -> None:
    """Wrap every event parser so its failure is reported instead of ending the connection.

    ``parsers`` is discord.py's table of gateway event parsers (``ConnectionState.parsers``,
    which the websocket looks events up in); it is changed in place.
    """
    for event, parse in list(parsers.items()):
        parsers[event] = _guarded(event, parse, on_failure)


def _guarded(event: str, parse: EventParser, on_failure: ParseFailure) -> EventParser:
    def guarded(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:
            on_failure(event, data, exc)

    return guarded


class MessageIntake:
    """Hands discord.py messages to the runner, retrying a failed recording; quarantines what
    never works, and events discord.py could not parse at all.

    Discord does not deliver a message again, so nothing escapes from here: a failure is logged
    by its type only (error texts can quote the message).
    """

    def __init__(
        self,
        to_inbound: Callable[[discord.Message], InboundMessage | None],
        hand_over: Callable[[InboundMessage | None], Awaitable[None]],
        keep: QuarantineCallback,
    ) -> None:
        self._to_inbound = to_inbound
        self._hand_over = hand_over
        self._keep_letter = keep
        self._quarantining: set[asyncio.Task[None]] = set()

    async def take(self, message: discord.Message) -> None:
        """Convert and hand over one message; returns once it is recorded or quarantined."""
        try:
            inbound = self._to_inbound(message)
        except Exception as exc:
            await self._quarantine(message, f"unreadable message: {type(exc).__name__}", exc)
            return

        def warn(retry_state: RetryCallState) -> None:
            failure = type(last_failure(retry_state)).__name__
            log.warning("discord: recording message %s failed (%s); retrying", message.id, failure)

        try:
            await retried(
                partial(self._hand_over, inbound),
                stop=stop_after_attempt(HAND_OVER_ATTEMPTS),
                wait=doubling(HAND_OVER_RETRY_SECONDS),
                retry=retry_if_exception_type(Exception),  # the store failed: any error
                before_sleep=warn,
            )
        except Exception as exc:
            reason = f"not recorded after {HAND_OVER_ATTEMPTS} attempts: {type(exc).__name__}"
            await self._quarantine(message, reason, exc)

    def event_unparseable(self, event: str, data: Any, exc: Exception) -> None:
        """discord.py could not parse a gateway event: keep it raw instead of dying on it."""
        ref = data.get("id") if isinstance(data, dict) else None
        reason = f"unparseable {event} event: {type(exc).__name__}"
        letter = DeadLetter(PLATFORM, reason, data, f"{event}:{ref}", str(exc))
        task = asyncio.get_running_loop().create_task(self._keep(letter))
        self._quarantining.add(task)
        task.add_done_callback(self._quarantining.discard)

    async def _quarantine(self, message: discord.Message, reason: str, exc: Exception) -> None:
        raw = message_summary(message)
        await self._keep(DeadLetter(PLATFORM, reason, raw, raw["id"], str(exc)))

    async def _keep(self, letter: DeadLetter) -> None:
        try:
            await self._keep_letter(letter)
        except Exception as error:
            log.error(
                "discord: %s could be neither handled nor quarantined (%s)",
                letter.ref,
                type(error).__name__,
            )
