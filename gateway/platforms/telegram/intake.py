"""From a raw Telegram update to the runner: parse, check, convert, hand over, or quarantine.

Polling and the webhook both take updates through :class:`UpdateIntake`, one at a time, as the
decoded JSON Telegram sent. An update that can never be handled (python-telegram-bot cannot
parse it, or the message lacks its chat or sender) is quarantined at once; one whose handing
over fails (the runner could not record it) is retried by the caller, and quarantined on its
:data:`POISON_ATTEMPTS`-th failure, so no update blocks the ones behind it for long. Logged
reasons name the error's type only: error texts can quote the update, and so the user's words.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Bot, CallbackQuery, Message, MessageEntity, Update

from gateway.messages.inbound import InboundMessage
from gateway.messages.quarantine import DeadLetter, QuarantineCallback
from gateway.platforms.base import CommandMenu, InboundCallback, NoCommands
from gateway.platforms.telegram.media import media_items, unread_kinds
from gateway.text.split import utf16_len

log = logging.getLogger(__name__)

PLATFORM = "telegram"
POISON_ATTEMPTS = 3
"""Failed hand-overs of one update before it is quarantined instead of retried again."""
CLIENT_SPLIT_THRESHOLD = 3800
"""A user message at least this long (UTF-16 units) may be the first piece of a longer paste."""
DEFAULT_PHOTO_PIXELS = 4_000_000
"""The photo size budget when none is configured (``media.max_photo_pixels``)."""


class PoisonUpdate(Exception):
    """An update that can never be handled; ``reason`` is safe to log, ``detail`` is not."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def telegram_session_key(
    chat_id: int, chat_type: str, thread_id: int | None, user_id: int, *, per_user: bool
) -> str:
    """Private chat per chat; a group per chat and forum topic, optionally per user."""
    key = f"{PLATFORM}:{chat_id}"
    if thread_id is not None:
        key += f":topic:{thread_id}"
    if chat_type != "private" and per_user:
        key += f":user:{user_id}"
    return key


def parse_update(raw: Any, bot: Bot) -> Update:
    """The update as python-telegram-bot's object, checked for what we rely on.

    Raises :class:`PoisonUpdate` for anything that is not a complete Telegram update.
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("update_id"), int):
        raise PoisonUpdate("not an update object")
    try:
        update = Update.de_json(raw, bot)
    except Exception as exc:
        raise PoisonUpdate(f"unparseable update: {type(exc).__name__}", str(exc)) from exc
    message = update.message
    if message is None:
        if "message" in raw:
            raise PoisonUpdate("message is not an object")
        return update
    if getattr(message, "chat", None) is None:  # typed as always there; PTB does not check
        raise PoisonUpdate("message without chat")
    if message.from_user is None:
        raise PoisonUpdate("message without sender")
    return update


class MessageReader:
    """Turns a parsed message into the runner's :class:`InboundMessage` (or None: not for us)."""

    def __init__(
        self,
        bot: Callable[[], Bot],
        *,
        per_user_sessions: bool,
        commands: Callable[[], CommandMenu] | None = None,
        photo_pixels: int = DEFAULT_PHOTO_PIXELS,
    ) -> None:
        self._bot = bot
        self._per_user = per_user_sessions
        self._photo_pixels = photo_pixels
        none = NoCommands()
        self._commands = commands or (lambda: none)
        """The runner's commands: a group message calling one of them is for the bot."""

    @property
    def username(self) -> str:
        return self._bot().username or ""

    def to_inbound(self, message: Message) -> InboundMessage | None:
        """The runner's view of a message, or None when it is not meant for the bot or carries
        nothing a person wrote (a service message such as "X joined")."""
        user = message.from_user
        if user is None:
            # parse_update keeps only messages with a sender; a caller that skipped it errs.
            raise ValueError("a message without a sender")
        text = message.text if message.text is not None else (message.caption or "")
        media = media_items(message, self._photo_pixels) if message.text is None else ()
        unread = unread_kinds(message) if message.text is None else ()
        if not text and not media and not unread:
            return None
        chat = message.chat
        mentioned = self._is_addressed(message, text)
        if chat.type != "private" and not mentioned:
            return None
        thread_id = message.message_thread_id if message.is_topic_message else None
        if chat.type != "private" and self.username:
            text = re.sub(rf"@{re.escape(self.username)}\b", "", text, flags=re.I).strip()
        return InboundMessage(
            platform=PLATFORM,
            chat_id=str(chat.id),
            user_id=str(user.id),
            text=text,
            platform_message_id=f"{chat.id}:{message.message_id}",
            session_key=telegram_session_key(
                chat.id, chat.type, thread_id, user.id, per_user=self._per_user
            ),
            thread_id=str(thread_id) if thread_id is not None else None,
            username=user.username,
            chat_type=chat.type,
            mentioned=mentioned,
            # An album comes as several messages: hold each piece for the rest (one turn).
            may_continue=utf16_len(message.text or "") >= CLIENT_SPLIT_THRESHOLD
            or message.media_group_id is not None,
            sent_at=message.date.timestamp(),
            attachments=unread,
            media=media,
        )

    def _is_addressed(self, message: Message, text: str) -> bool:
        """Mentioned by @username, a reply to one of the bot's messages, or a command."""
        username = self.username
        bot_id = self._bot().id
        if message.text is not None and self._commands().parse(text, username) is not None:
            return True
        replied = message.reply_to_message
        if replied is not None and replied.from_user is not None:
            if replied.from_user.id == bot_id:
                return True
        wanted = f"@{username}".lower()
        kinds: list[str | None] = [MessageEntity.MENTION, MessageEntity.TEXT_MENTION]
        entities = (
            message.parse_entities(kinds)
            if message.text is not None
            else message.parse_caption_entities(kinds)
        )
        for entity, value in entities.items():
            if value.lower() == wanted or (entity.user and entity.user.id == bot_id):
                return True
        return bool(username) and wanted in text.lower()


class UpdateIntake:
    """Takes raw updates one at a time, for polling and the webhook alike."""

    def __init__(
        self,
        bot: Callable[[], Bot],
        reader: MessageReader,
        deliver: Callable[[], InboundCallback | None],
        quarantine: QuarantineCallback,
        on_press: Callable[[CallbackQuery], Awaitable[None]] | None = None,
    ) -> None:
        self._bot = bot
        self._on_press = on_press
        self._reader = reader
        self._deliver = deliver
        self._quarantine = quarantine
        self._failures: dict[int, int] = {}

    async def take(self, raw: Any) -> None:
        """Handle one update; returns once it is recorded, ignored or quarantined.

        Raises when handing it over failed and it should come again (do not confirm it).
        """
        ref = raw.get("update_id") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and "callback_query" in raw:
            await self._take_press(raw, ref)
            return
        try:
            inbound = self._read(raw)
        except PoisonUpdate as poison:
            await self._keep(raw, ref, poison.reason, poison.detail)
            return
        on_message = self._deliver()
        if inbound is None or on_message is None:
            return
        key = ref if isinstance(ref, int) else -1
        try:
            await on_message(inbound)
        except Exception as exc:
            attempts = self._failures.get(key, 0) + 1
            if attempts < POISON_ATTEMPTS:
                self._failures[key] = attempts
                raise
            self._failures.pop(key, None)
            reason = f"not recorded after {attempts} attempts: {type(exc).__name__}"
            await self._keep(raw, ref, reason, str(exc))
            return
        self._failures.pop(key, None)

    async def _take_press(self, raw: dict[str, Any], ref: object) -> None:
        """A button pressed: handed to the adapter once (a press is answered at once or not
        at all, so a failure is logged, never retried)."""
        try:
            query = parse_update(raw, self._bot()).callback_query
        except PoisonUpdate as poison:
            await self._keep(raw, ref, poison.reason, poison.detail)
            return
        if query is None or self._on_press is None:
            return
        try:
            await self._on_press(query)
        except Exception as exc:
            log.warning("telegram: button press not handled: %s", type(exc).__name__)

    def _read(self, raw: Any) -> InboundMessage | None:
        update = parse_update(raw, self._bot())
        if update.message is None:
            return None
        try:
            return self._reader.to_inbound(update.message)
        except Exception as exc:
            raise PoisonUpdate(f"unreadable message: {type(exc).__name__}", str(exc)) from exc

    async def _keep(self, raw: Any, ref: object, reason: str, detail: str) -> None:
        letter = DeadLetter(PLATFORM, reason, raw, None if ref is None else str(ref), detail)
        await self._quarantine(letter)
