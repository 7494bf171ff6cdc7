"""Telegram through python-telegram-bot: polling or webhook, replies, typing, commands.

Polling is our own loop (:mod:`gateway.platforms.telegram.polling`): each update is handed to
the runner, which records it durably, and only then is the offset moved past it; a watchdog
restarts a poll that went silent, and no error ends polling except a revoked token. Updates go
through :mod:`gateway.platforms.telegram.intake`, which quarantines the ones that cannot be
parsed or recorded instead of letting them block the ones behind.

In webhook mode Telegram POSTs each update to us instead (see
:mod:`gateway.platforms.telegram.webhook`); the same update handling runs, and the HTTP answer
is sent only after the runner recorded the update, so it is the acknowledgement. The webhook is
left set on stop: Telegram keeps queueing updates while we are down. There is no watchdog in
webhook mode (nothing of ours can go silent; Telegram retries what we did not acknowledge).
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

from telegram import BotCommand, CallbackQuery
from telegram.constants import ChatAction
from telegram.error import (
    BadRequest,
    ChatMigrated,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder

from gateway.messages.media_items import MediaItem, MediaUnavailable
from gateway.platforms.base import (
    AdapterHooks,
    ApprovalPress,
    DeliveryTarget,
    InboundCallback,
    LiveMode,
    PlatformAdapter,
    PlatformAuthError,
    SendFailure,
    VoiceNote,
)
from gateway.platforms.telegram.approvals import (
    PARSE_MODE,
    approval_keyboard,
    approval_text,
    closed_text,
    parse_callback_data,
)
from gateway.platforms.telegram.gate import GatedRateLimiter
from gateway.platforms.telegram.intake import (
    PLATFORM,
    MessageReader,
    UpdateIntake,
    telegram_session_key,
)
from gateway.platforms.telegram.polling import (
    ALLOWED_UPDATES,
    Poller,
    retry_after_seconds,
    token_rejected_text,
)
from gateway.platforms.telegram.settings import TelegramSettings
from gateway.platforms.telegram.voice import TELEGRAM_CAPTION_LIMIT, send_telegram_voice
from gateway.platforms.telegram.webhook import (
    MalformedUpdate,
    WebhookServer,
    public_webhook_url,
    webhook_secret,
)
from gateway.settings.media import MediaSettings
from gateway.settings.secrets import ConfigError
from gateway.text.markdown import TELEGRAM_PARSE_MODE, markdown_to_telegram
from gateway.text.redaction import log_sanitizer
from gateway.text.split import TELEGRAM_MESSAGE_LIMIT, split_message, utf16_len

log = logging.getLogger(__name__)

__all__ = ["PLATFORM", "TelegramAdapter", "telegram_session_key"]

WEBHOOK_MODE = "webhook"
TYPING_INTERVAL_SECONDS = 4.0
"""Telegram shows "typing" for about 5 s; repeat a little sooner."""
RATE_LIMIT_RETRIES = 3
"""How often AIORateLimiter retries a request Telegram answered 429 (never delivered), after
the ``retry_after`` it was given. A send is retried in two places, each for what the other
leaves: this in-request retry of 429 only (1 + 3 attempts, the waits Telegram asks for), and
the delivery's retry (:mod:`gateway.delivery.deliverer`) of a 429 past it, a 5xx or a network error,
with backoff doubling from 1 s to 30 s for at most ``gateway.delivery_retry_seconds``
(600 s) from the first failure."""
_FINAL_SEND_ERRORS = (Forbidden, BadRequest, ChatMigrated, InvalidToken)
"""A send refused for one of these will be refused again: the reply fails, it is not retried."""
_FINAL_FETCH_ERRORS = (BadRequest, Forbidden, InvalidToken, EndPointNotFound)
"""A download refused for one of these (a file gone or too big) is refused again."""
_FORMATTING_ERRORS = ("can't parse entities", "message is too long")
"""Rejections of the formatted text after which the plain text (which fits) is sent instead."""
DRAFT_UPDATE_SECONDS = 1.0
"""Between two draft updates of a live reply in a private chat (about one message a second)."""
GROUP_EDIT_SECONDS = 3.0
"""Between two edits of a live reply in a group: groups allow 20 sends or edits a minute."""
FIND_SENT_LIMIT = 20
"""Unknown message ids tried after the last known one for a part a crash left in doubt (ids
known to be other messages are skipped without trying; the part went out soon after)."""


class TelegramAdapter(PlatformAdapter):
    """A Telegram bot: receives text messages (long polling or webhook), sends Markdown replies."""

    name = PLATFORM
    message_limit = TELEGRAM_MESSAGE_LIMIT
    caption_limit = TELEGRAM_CAPTION_LIMIT
    typing_interval = TYPING_INTERVAL_SECONDS

    def __init__(
        self,
        settings: TelegramSettings,
        token: str,
        media: MediaSettings | None = None,
        hooks: AdapterHooks | None = None,
    ) -> None:
        super().__init__(hooks)
        self.settings = settings
        self.typing_delay = settings.typing_delay
        # Typed as Any: each builder call changes ApplicationBuilder's generic parameters.
        builder: Any = ApplicationBuilder().token(token).updater(None)
        limits: dict[str, Any] = dict(
            overall_max_rate=settings.rate_limit_per_second,
            group_max_rate=settings.rate_limit_per_group_per_minute,
            max_retries=RATE_LIMIT_RETRIES,
        )
        limiter = (
            AIORateLimiter(**limits)
            if self.send_gate is None
            else GatedRateLimiter(self.send_gate, **limits)
        )
        builder = builder.rate_limiter(limiter)
        if settings.base_url:
            builder = builder.base_url(settings.base_url)
        if settings.base_file_url:
            builder = builder.base_file_url(settings.base_file_url)
        self.application: Application = builder.build()  # type: ignore[type-arg]
        self._on_message: InboundCallback | None = None
        self._intake = UpdateIntake(
            lambda: self.bot,
            MessageReader(
                lambda: self.bot,
                per_user_sessions=settings.per_user_sessions_in_groups,
                commands=lambda: self.commands,
                photo_pixels=(media or MediaSettings()).max_photo_pixels,
            ),
            lambda: self._on_message,
            self.keep_dead_letter,
            self._on_press,
        )
        self._poller = Poller(
            lambda: self.bot,
            settings,
            self._intake.take,
            self._token_revoked,
            gate=self.send_gate,
        )
        self._webhook: WebhookServer | None = None
        self.webhook_port: int | None = None
        """The port the webhook server bound (webhook mode, once started)."""
        self.webhook_url: str | None = None
        """The URL given to setWebhook (webhook mode, once started)."""
        self._initialized = False
        self.username = ""
        self._prompts: dict[str, tuple[str, str]] = {}
        """Open approval prompts: message id -> (tool, preview), to close them with."""

    @property
    def bot(self):  # type: ignore[no-untyped-def]
        """The python-telegram-bot Bot (with the rate limiter)."""
        return self.application.bot

    @property
    def polling_restarts(self) -> int:
        """How often the watchdog restarted a silent poll."""
        return self._poller.restarts

    def measure(self, text: str) -> int:
        return utf16_len(text)

    def split(self, text: str, limit: int | None = None) -> list[str]:
        """Parts that fit the limit both as sent (rendered to MarkdownV2, whose escapes and
        markup can outgrow the Markdown) and as their plain-text fallback."""
        return split_message(
            text, limit or self.message_limit, length=utf16_len, render=markdown_to_telegram
        )

    async def start(self, on_message: InboundCallback) -> str:
        """Log in (getMe), register the command menu (:attr:`commands`), then serve the
        webhook or (after deleting any webhook) start polling, as ``mode`` says.

        Raises :class:`PlatformAuthError` (naming the token's variable) when Telegram rejects
        the token.
        """
        self._on_message = on_message
        try:
            await self.application.initialize()
        except InvalidToken:
            # PTB's own message quotes the token: raise one that names the variable instead.
            raise PlatformAuthError(token_rejected_text(self.settings.token_env)) from None
        self._initialized = True
        self.username = self.bot.username or ""
        await self.bot.set_my_commands([BotCommand(*entry) for entry in self.commands.menu()])
        if self.settings.mode == WEBHOOK_MODE:
            await self._start_webhook()
        else:
            await self.bot.delete_webhook()
            self._poller.start()
        return f"@{self.username}"

    async def _start_webhook(self) -> None:
        """Listen first, then tell Telegram where to POST (so no update finds nobody there)."""
        settings = self.settings
        if not settings.webhook_url:
            raise ConfigError("platforms.telegram.webhook_url: required in webhook mode")
        secret = webhook_secret(settings.webhook_secret_env)
        log_sanitizer().add_secrets([secret])  # also a generated one, unknown to the config
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
        await self._poller.stop()

    async def stop(self) -> None:
        """Stop receiving and close the client."""
        await self.stop_receiving()
        if self._initialized:
            self._initialized = False
            await self.application.shutdown()

    # -- receiving -------------------------------------------------------------------------

    def _token_revoked(self, error: PlatformAuthError) -> None:
        self.fail(str(error))

    @property
    def webhook_mode(self) -> bool:
        """Whether ``mode`` is webhook."""
        return self.settings.mode == WEBHOOK_MODE

    async def take_webhook_update(self, data: dict[str, Any]) -> None:
        """An update a standby received by webhook (failover), through the same intake."""
        await self._handle_webhook_update(data)

    async def _handle_webhook_update(self, data: dict[str, Any]) -> None:
        """One POSTed update, through the same intake as a polled one.

        An update Telegram could not even number is answered 400; any other bad update is
        quarantined and acknowledged, so Telegram does not send it again and again.
        """
        if not isinstance(data.get("update_id"), int):
            raise MalformedUpdate("no integer update_id")
        await self._intake.take(data)

    async def _on_press(self, query: CallbackQuery) -> None:
        """A button pressed: the runner decides; the press is always answered (a refusal as
        the button's short text)."""
        parsed = parse_callback_data(query.data)
        refusal: str | None = "This button is no longer active."
        if parsed is not None and self.on_approval is not None:
            user = query.from_user
            press = ApprovalPress(PLATFORM, parsed[0], parsed[1], str(user.id), user.username)
            refusal = await self.on_approval(press)
        await self.bot.answer_callback_query(query.id, text=refusal)

    # -- sending ---------------------------------------------------------------------------

    async def send_approval(
        self, target: DeliveryTarget, tool: str, preview: str, approval_id: str
    ) -> str:
        """One HTML message naming the tool and its escaped arguments, with the buttons."""
        extra = {"message_thread_id": int(target.thread_id)} if target.thread_id else {}
        sent = await self.bot.send_message(
            int(target.chat_id),
            approval_text(tool, preview),
            parse_mode=PARSE_MODE,
            reply_markup=approval_keyboard(approval_id),
            **extra,
        )
        message_id = str(sent.message_id)
        self._prompts[message_id] = (tool, preview)
        return message_id

    async def close_approval(self, target: DeliveryTarget, message_id: str, outcome: str) -> None:
        """The prompt's question replaced by the outcome; its buttons go with the edit."""
        shown = self._prompts.pop(message_id, None)
        chat_id, message = int(target.chat_id), int(message_id)
        if shown is None:  # sent before a restart: just take the buttons away
            await self.bot.edit_message_reply_markup(chat_id=chat_id, message_id=message)
            return
        await self.bot.edit_message_text(
            closed_text(*shown, outcome), chat_id=chat_id, message_id=message, parse_mode=PARSE_MODE
        )

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

    async def send_voice(self, target: DeliveryTarget, voice: VoiceNote, caption: str) -> str:
        """``sendVoice`` (see :mod:`gateway.platforms.telegram.voice`)."""
        return await send_telegram_voice(self.bot, target, voice, caption)

    async def fetch_file(self, item: MediaItem) -> bytes:
        """getFile, then the download (python-telegram-bot's own calls)."""
        if item.file_id is None:
            raise MediaUnavailable("Telegram: the message named no file")
        try:
            file = await self.bot.get_file(item.file_id)
            return bytes(await file.download_as_bytearray())
        except TelegramError as exc:
            raise media_failure(exc) from exc
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            # python-telegram-bot could not parse getFile's answer: asking again won't help.
            raise MediaUnavailable("Telegram: unexpected answer for the file") from exc

    async def send_typing(self, target: DeliveryTarget) -> None:
        extra = {"message_thread_id": int(target.thread_id)} if target.thread_id else {}
        await self.bot.send_chat_action(int(target.chat_id), ChatAction.TYPING, **extra)

    def anchor_of(self, platform_message_id: str) -> str:
        return platform_message_id.rpartition(":")[2]

    async def find_sent(
        self, target: DeliveryTarget, text: str, after: str, known: frozenset[str]
    ) -> str | None:
        """Look at the few message ids after ``after`` for our own message with this text.

        The Bot API cannot read a message, but editing one to the text it already has is
        refused as "message is not modified", and only the bot's own messages are editable.
        Only in a private chat, where every bot message is recorded and all but the one in
        doubt are ``known`` (the caller counts every recorded message of the chat, whatever
        session sent it: a scheduled job's answer too): an editable unknown message there is
        the part (an edit that "succeeds" only re-applies its formatting). In groups, None.
        """
        chat_id = int(target.chat_id)
        if chat_id <= 0 or not after.isdigit():  # groups and channels have negative ids
            return None
        candidates = (i for i in itertools.count(int(after) + 1) if str(i) not in known)
        for message_id in itertools.islice(candidates, FIND_SENT_LIMIT):
            try:
                await self._edit_to(chat_id, message_id, text)
            except BadRequest as exc:
                reason = str(exc).lower()
                if "not modified" in reason:
                    return str(message_id)
                if "not found" in reason:
                    return None  # ids are sequential: nothing was sent after this one
                continue  # someone else's message ("can't be edited")
            return str(message_id)
        return None

    def live_mode(self, target: DeliveryTarget) -> LiveMode | None:
        """Drafts in private chats (positive ids, no topics), edited messages elsewhere."""
        if not self.settings.streaming:
            return None
        if int(target.chat_id) > 0 and target.thread_id is None:
            return LiveMode(drafts=True, interval=DRAFT_UPDATE_SECONDS)
        return LiveMode(drafts=False, interval=GROUP_EDIT_SECONDS)

    async def send_preview(self, target: DeliveryTarget, text: str) -> str:
        extra = {"message_thread_id": int(target.thread_id)} if target.thread_id else {}
        sent = await self.bot.send_message(int(target.chat_id), text, **extra)
        return str(sent.message_id)

    async def edit_part(
        self, target: DeliveryTarget, message_id: str, text: str, *, formatted: bool
    ) -> None:
        chat_id, message = int(target.chat_id), int(self.anchor_of(message_id))
        try:
            if formatted:
                await self._edit_to(chat_id, message, text)
            else:
                await self.bot.edit_message_text(text, chat_id=chat_id, message_id=message)
        except BadRequest as exc:
            if "not modified" not in str(exc).lower():
                raise

    async def delete_part(self, target: DeliveryTarget, message_id: str) -> None:
        try:
            await self.bot.delete_message(int(target.chat_id), int(self.anchor_of(message_id)))
        except BadRequest as exc:
            if "not found" not in str(exc).lower():
                raise

    async def send_draft(self, target: DeliveryTarget, draft_id: int, text: str) -> None:
        await self.bot.send_message_draft(int(target.chat_id), draft_id, text)

    async def _edit_to(self, chat_id: int, message_id: int, text: str) -> None:
        try:
            await self.bot.edit_message_text(
                markdown_to_telegram(text),
                chat_id=chat_id,
                message_id=message_id,
                parse_mode=TELEGRAM_PARSE_MODE,
            )
        except BadRequest as exc:
            if not any(reason in str(exc).lower() for reason in _FORMATTING_ERRORS):
                raise
            await self.bot.edit_message_text(text, chat_id=chat_id, message_id=message_id)

    def classify_send_error(self, error: Exception) -> SendFailure:
        """Refusals about the chat or the request (403 blocked, 400 chat not found, a
        migrated group, a rejected token) are final; 429 waits its retry_after; server
        errors, broken connections and unreadable answers are worth another attempt."""
        if isinstance(error, RetryAfter):
            retry_after = retry_after_seconds(error.retry_after)
            return SendFailure(f"flood control ({retry_after:g} s)", True, retry_after)
        reason = f"{type(error).__name__}: {error}"
        if isinstance(error, _FINAL_SEND_ERRORS):
            return SendFailure(reason, transient=False)
        if isinstance(error, TelegramError):
            return SendFailure(reason, transient=True)
        return super().classify_send_error(error)


def media_failure(error: TelegramError) -> MediaUnavailable:
    """What a failed getFile or download means: Telegram's own words for a refusal (a file
    gone or too big, final), a transient failure for server errors, timeouts and floods."""
    if isinstance(error, _FINAL_FETCH_ERRORS):
        words = error.message or type(error).__name__
        return MediaUnavailable(f"Telegram: {words[:1].lower()}{words[1:]}")
    transient = isinstance(error, (NetworkError, RetryAfter))
    return MediaUnavailable(f"Telegram: {type(error).__name__}", transient=transient)
