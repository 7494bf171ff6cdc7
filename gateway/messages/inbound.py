"""One received chat message, platform-neutral: adapters build it, the runner uses it."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from gateway.messages.command_call import Command, parse_call
from gateway.messages.media_items import MediaItem

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""Half of a UTF-16 pair on its own (JSON allows ``"\\ud800"``); no encoding can store it."""
REPLACEMENT_CHARACTER = "\ufffd"


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One user message as the runner sees it, whatever platform it came from.

    ``platform_message_id`` is the platform's own id, unique per platform, used to recognise a
    redelivered message. ``session_key`` says which conversation it belongs to (chat, topic,
    thread, or user within a group). ``may_continue`` marks a piece of a long text the platform's
    client split, so the worker waits briefly for the rest before starting a turn.
    ``sent_at`` is the platform's time of the message (epoch seconds: Telegram ``date``,
    Discord ``created_at``); the context policy decides on these times, never the wall clock,
    so a replayed transcript decides as the live run did. None when the platform gave none.
    """

    platform: str
    chat_id: str
    user_id: str
    text: str
    platform_message_id: str
    session_key: str
    thread_id: str | None = None
    username: str | None = None
    chat_type: str = "private"
    mentioned: bool = False
    may_continue: bool = False
    sent_at: float | None = None
    attachments: tuple[str, ...] = ()
    """Kinds of content the message carried that the bot cannot read ("poll", "video", ...)."""
    media: tuple[MediaItem, ...] = ()
    """Content the bot reads (photos, documents, voice, stickers, locations), not fetched yet."""
    command: Command | None = field(init=False, repr=False, compare=False)
    """The command the text calls (known or not), parsed once here; None for ordinary text."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", parse_call(self.text))

    @property
    def is_group(self) -> bool:
        """Whether several people share the chat (replies then name their target)."""
        return self.chat_type != "private"

    def to_payload(self) -> dict[str, Any]:
        """A JSON-safe dict for the inbound table, enough to rebuild the message after a restart."""
        payload = asdict(self)
        del payload["command"]  # derived from the text
        return payload

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> InboundMessage:
        """Rebuild a message stored with :meth:`to_payload` (unknown keys are ignored)."""
        known = {f.name for f in fields(cls) if f.init}
        values = {key: value for key, value in payload.items() if key in known}
        values["attachments"] = tuple(values.get("attachments") or ())
        values["media"] = tuple(
            item if isinstance(item, MediaItem) else MediaItem.from_payload(item)
            for item in values.get("media") or ()
        )
        return cls(**values)

    def repaired(self) -> InboundMessage:
        """The message with every text field storable and sendable (see :func:`repair_text`)."""
        changes: dict[str, Any] = {
            f.name: repair_text(value)
            for f in fields(self)
            if isinstance(value := getattr(self, f.name), str) and repair_text(value) != value
        }
        return replace(self, **changes) if changes else self


def repair_text(text: str) -> str:
    """Text any database and platform accepts: a lone surrogate becomes U+FFFD, NUL is dropped.

    Both come through JSON from a buggy client; UTF-8 cannot encode the one, PostgreSQL refuses
    the other. The message is still answered, with this repaired text.
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub(REPLACEMENT_CHARACTER, text)
