"""Telegram through python-telegram-bot: polling or webhook, replies, typing, commands, watchdog.

Polling is our own small loop over ``bot.get_updates`` rather than PTB's ``Updater``: the
Updater confirms an update (advances the offset) as soon as it is queued, before any handler
ran, so a crash could lose it. Here each update is handed to the runner, which records it
durably, and only then is the offset moved past it. A watchdog restarts the loop when
getUpdates has not come back for ``watchdog_seconds`` (a poll that died silently overnight).

In webhook mode Telegram POSTs each update to us instead (see
:mod:`gateway.platforms.telegram_webhook`); the same update handling runs, and the HTTP answer
is sent only after the runner recorded the update, so it is the acknowledgement. The webhook is
left set on stop: Telegram keeps queueing updates while we are down. There is no watchdog in
webhook mode (nothing of ours can go silent; Telegram retries what we did not acknowledge).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from typing import Any

from telegram import BotCommand, Message, MessageEntity, Update
from telegram.constants import ChatAction
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder

from gateway.commands import COMMAND_DESCRIPTIONS, parse_command
from gateway.config import ConfigError, TelegramSettings
from gateway.inbound import InboundMessage
from gateway.markdown_render import RENDER_MARGIN, TELEGRAM_PARSE_MODE, markdown_to_telegram
from gateway.platforms.base import (
    DeliveryTarget,
    InboundCallback,
    PlatformAdapter,
    SendFailure,
)
from gateway.platforms.telegram_webhook import (
    MalformedUpdate,
    WebhookServer,
    public_webhook_url,
    webhook_secret,
)
from gateway.text_split import TELEGRAM_MESSAGE_LIMIT, utf16_len

log = logging.getLogger(__name__)

PLATFORM = "telegram"
WEBHOOK_MODE = "webhook"
ALLOWED_UPDATES = ("message",)
"""The update types we handle, asked of getUpdates and setWebhook alike."""
TYPING_INTERVAL_SECONDS = 4.0
"""Telegram shows "typing" for about 5 s; repeat a little sooner."""
GET_UPDATES_READ_MARGIN_SECONDS = 5.0
"""Read timeout of a long poll beyond its own ``timeout``."""
WATCHDOG_MIN_SLACK_SECONDS = 1.0
"""The watchdog never fires before an idle long poll (``poll_timeout``) plus this could end."""
POLL_RETRY_SECONDS = 1.0
"""Pause after a failed getUpdates before trying again."""
RATE_LIMIT_RETRIES = 3
"""How often AIORateLimiter retries a request Telegram answered 429 (never delivered)."""
CLIENT_SPLIT_THRESHOLD = 3800
"""A user message at least this long (UTF-16 units) may be the first piece of a longer paste."""
_FINAL_SEND_ERRORS = (Forbidden, BadRequest, ChatMigrated, InvalidToken)
"""A send refused for one of these will be refused again: the reply fails, it is not retried."""
_FORMATTING_ERRORS = ("can't parse entities", "message is too long")
"""Rejections of the formatted text after which the plain text (which fits) is sent instead."""


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


class TelegramAdapter(PlatformAdapter):
    """A Telegram bot: receives text messages (long polling or webhook), sends Markdown replies."""

    name = PLATFORM
    message_limit = TELEGRAM_MESSAGE_LIMIT - RENDER_MARGIN
    typing_interval = TYPING_INTERVAL_SECONDS

    def __init__(self, settings: TelegramSettings, token: str) -> None:
        self.settings = settings
        self.typing_delay = settings.typing_delay
        # Typed as Any: each builder call changes ApplicationBuilder's generic parameters.
        builder: Any = ApplicationBuilder().token(token).updater(None)
        limiter = AIORateLimiter(
            overall_max_rate=settings.rate_limit_per_second,
            group_max_rate=settings.rate_limit_per_group_per_minute,
            max_retries=RATE_LIMIT_RETRIES,
        )
        builder = builder.rate_limiter(limiter)
        if settings.base_url:
            builder = builder.base_url(settings.base_url)
        if settings.base_file_url:
            builder = builder.base_file_url(settings.base_file_url)
        self.application: Application = builder.build()  # type: ignore[type-arg]
        self._on_message: InboundCallback | None = None
        self._offset = 0
        self._last_activity = time.monotonic()
        self._poll_started: float | None = None
        """When the getUpdates in flight was sent (None while handling updates)."""
        self._supervisor: asyncio.Task[None] | None = None
        self.polling_restarts = 0
        self._webhook: WebhookServer | None = None
        self.webhook_port: int | None = None
        """The port the webhook server bound (webhook mode, once started)."""
        self.webhook_url: str | None = None
        """The URL given to setWebhook (webhook mode, once started)."""
        self._initialized = False
        self.username = ""

    @property
    def bot(self):  # type: ignore[no-untyped-def]
        """The python-telegram-bot Bot (with the rate limiter)."""
        return self.application.bot

    def measure(self, text: str) -> int:
        return utf16_len(text)

    async def start(self, on_message: InboundCallback) -> str:
        """Log in (getMe), register commands, then serve the webhook or (after deleting any
        webhook) start polling, as ``mode`` says."""
        self._on_message = on_message
        await self.application.initialize()
        self._initialized = True
        self.username = self.bot.username or ""
        commands = [BotCommand(name, text) for name, text in COMMAND_DESCRIPTIONS.items()]
        await self.bot.set_my_commands(commands)
        if self.settings.mode == WEBHOOK_MODE:
            await self._start_webhook()
        else:
            await self.bot.delete_webhook()
            self._last_activity = time.monotonic()
            self._supervisor = asyncio.create_task(self._supervise(), name="telegram-polling")
        return f"@{self.username}"

    async def _start_webhook(self) -> None:
        """Listen first, then tell Telegram where to POST (so no update finds nobody there)."""
        settings = self.settings
        if not settings.webhook_url:
            raise ConfigError("platforms.telegram.webhook_url: required in webhook mode")
        secret = webhook_secret(settings.webhook_secret_env)
        self._webhook = WebhookServer(
            listen=settings.webhook_listen,
            port=settings.webhook_port,
            path=settings.webhook_path,
            secret=secret,
            handle=self._handle_webhook_update,
        )
        self.webhook_port = await self._webhook.start()
        self.webhook_url = public_webhook_url(settings.webhook_url, self.webhook_port)
        await self.bot.set_webhook(
            url=self.webhook_url,
            secret_token=secret,
            allowed_updates=ALLOWED_UPDATES,
            drop_pending_updates=False,
        )
        log.info(
            "telegram: webhook mode, listening on %s, Telegram posts to %s",
            self._webhook.local_url,
            self.webhook_url,
        )

    async def stop_receiving(self) -> None:
        """Stop taking updates: polling confirms the offset of what was handled; the webhook
        server answers 503 and closes (the webhook stays set, so Telegram keeps queueing)."""
        if self._webhook is not None:
            server, self._webhook = self._webhook, None
            await server.stop()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
            with contextlib.suppress(NetworkError):
                await self.bot.get_updates(offset=self._offset, timeout=0)

    async def stop(self) -> None:
        """Stop receiving and close the client."""
        await self.stop_receiving()
        if self._initialized:
            self._initialized = False
            await self.application.shutdown()

    # -- receiving -------------------------------------------------------------------------

    async def _supervise(self) -> None:
        """Run the poll loop; restart it when it has been silent past the watchdog limit."""
        check_every = min(self.settings.watchdog_seconds / 4, 5.0)
        while True:
            poller = asyncio.create_task(self._poll_loop())
            try:
                while not poller.done():
                    await asyncio.wait({poller}, timeout=check_every)
                    # Only a getUpdates that has not come back counts as silence: time spent
                    # handling an update (recording it) must never get the loop cancelled.
                    waiting_since = self._poll_started
                    silent = 0.0 if waiting_since is None else time.monotonic() - waiting_since
                    if not poller.done() and silent > self._watchdog_limit():
                        log.warning(
                            "telegram: getUpdates silent for %.0f s; restarting polling", silent
                        )
                        self.polling_restarts += 1
                        break
            finally:
                poller.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poller
            if poller.done() and not poller.cancelled() and poller.exception() is not None:
                log.error("telegram: polling stopped: %s", poller.exception())
                await asyncio.sleep(POLL_RETRY_SECONDS)
            self._last_activity = time.monotonic()

    def _watchdog_limit(self) -> float:
        """Silence that means a dead poll: never less than an idle long poll legitimately takes."""
        idle_poll = self.settings.poll_timeout + WATCHDOG_MIN_SLACK_SECONDS
        return max(self.settings.watchdog_seconds, idle_poll)

    async def _poll_loop(self) -> None:
        """getUpdates forever; each update is recorded by the runner before it is confirmed."""
        timeout = self.settings.poll_timeout
        while True:
            self._poll_started = time.monotonic()
            try:
                updates = await self.bot.get_updates(
                    offset=self._offset,
                    timeout=timeout,
                    allowed_updates=ALLOWED_UPDATES,
                    read_timeout=timeout + GET_UPDATES_READ_MARGIN_SECONDS,
                )
            except RetryAfter as exc:
                await asyncio.sleep(_seconds(exc.retry_after))
                continue
            except (Conflict, NetworkError) as exc:
                log.warning("telegram: getUpdates failed (%s); retrying", exc)
                await asyncio.sleep(POLL_RETRY_SECONDS)
                continue
            finally:
                self._poll_started = None
            self._last_activity = time.monotonic()
            for update in updates:
                await self._handle_update(update)
                self._offset = max(self._offset, update.update_id + 1)
                self._last_activity = time.monotonic()

    async def _handle_webhook_update(self, data: dict[str, Any]) -> None:
        """One POSTed update, decoded, through the same handling as a polled one."""
        if not isinstance(data.get("update_id"), int):
            raise MalformedUpdate("no integer update_id")
        try:
            update = Update.de_json(data, self.bot)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise MalformedUpdate(f"{type(exc).__name__}: {exc}") from exc
        await self._handle_update(update)

    async def _handle_update(self, update: Update) -> None:
        """Hand a text message to the runner; returns once the runner has recorded it."""
        message = update.message
        if message is None or message.text is None or message.from_user is None:
            return
        inbound = self._to_inbound(message)
        if inbound is not None and self._on_message is not None:
            await self._on_message(inbound)

    def _to_inbound(self, message: Message) -> InboundMessage | None:
        """The runner's view of a text message, or None when it is not meant for the bot."""
        assert message.from_user is not None and message.text is not None
        chat = message.chat
        mentioned = self._is_addressed(message)
        if chat.type != "private" and not mentioned:
            return None
        thread_id = message.message_thread_id if message.is_topic_message else None
        text = message.text
        if chat.type != "private" and self.username:
            text = re.sub(rf"@{re.escape(self.username)}\b", "", text, flags=re.I).strip()
        user = message.from_user
        return InboundMessage(
            platform=PLATFORM,
            chat_id=str(chat.id),
            user_id=str(user.id),
            text=text,
            platform_message_id=f"{chat.id}:{message.message_id}",
            session_key=telegram_session_key(
                chat.id,
                chat.type,
                thread_id,
                user.id,
                per_user=self.settings.per_user_sessions_in_groups,
            ),
            thread_id=str(thread_id) if thread_id is not None else None,
            username=user.username,
            chat_type=chat.type,
            mentioned=mentioned,
            may_continue=utf16_len(message.text) >= CLIENT_SPLIT_THRESHOLD,
            sent_at=message.date.timestamp(),
        )

    def _is_addressed(self, message: Message) -> bool:
        """Mentioned by @username, a reply to one of the bot's messages, or a command."""
        text = message.text or ""
        if parse_command(text, self.username) is not None:
            return True
        replied = message.reply_to_message
        if replied is not None and replied.from_user is not None:
            if replied.from_user.id == self.bot.id:
                return True
        wanted = f"@{self.username}".lower()
        for entity, value in message.parse_entities(
            [MessageEntity.MENTION, MessageEntity.TEXT_MENTION]
        ).items():
            if value.lower() == wanted or (entity.user and entity.user.id == self.bot.id):
                return True
        return bool(self.username) and wanted in text.lower()

    # -- sending ---------------------------------------------------------------------------

    async def send_part(self, target: DeliveryTarget, text: str) -> str:
        """Send one part formatted; plain text when Telegram rejects the formatting."""
        extra = {"message_thread_id": int(target.thread_id)} if target.thread_id else {}
        try:
            sent = await self.bot.send_message(
                int(target.chat_id),
                markdown_to_telegram(text),
                parse_mode=TELEGRAM_PARSE_MODE,
                **extra,
            )
        except BadRequest as exc:
            if not any(reason in str(exc).lower() for reason in _FORMATTING_ERRORS):
                raise
            log.warning("telegram: formatting rejected (%s); sending plain text", exc)
            sent = await self.bot.send_message(int(target.chat_id), text, **extra)
        return str(sent.message_id)

    async def send_typing(self, target: DeliveryTarget) -> None:
        extra = {"message_thread_id": int(target.thread_id)} if target.thread_id else {}
        await self.bot.send_chat_action(int(target.chat_id), ChatAction.TYPING, **extra)

    def classify_send_error(self, error: Exception) -> SendFailure:
        """Refusals about the chat or the request (403 blocked, 400 chat not found, a
        migrated group, a rejected token) are final; 429 waits its retry_after; server
        errors, broken connections and unreadable answers are worth another attempt."""
        if isinstance(error, RetryAfter):
            retry_after = _seconds(error.retry_after)
            return SendFailure(f"flood control ({retry_after:g} s)", True, retry_after)
        reason = f"{type(error).__name__}: {error}"
        if isinstance(error, _FINAL_SEND_ERRORS):
            return SendFailure(reason, transient=False)
        if isinstance(error, TelegramError):
            return SendFailure(reason, transient=True)
        return super().classify_send_error(error)


def _seconds(value: object) -> float:
    """RetryAfter.retry_after is an int or a timedelta depending on the PTB version."""
    total = getattr(value, "total_seconds", None)
    return float(total()) if callable(total) else float(value)  # type: ignore[arg-type]
