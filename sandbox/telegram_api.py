"""A protocol-faithful local Telegram Bot API server for tests, the offline demo and benchmarks.

The real python-telegram-bot client talks to it through
``ApplicationBuilder().base_url(emu.base_url).base_file_url(emu.base_file_url)``. It serves the
methods a chat gateway uses with Telegram's semantics (long-polled getUpdates with offset
confirmation, or webhook POSTs acknowledged by a 2xx; per-chat message ids, UTF-16 length
limits, HTML/MarkdownV2 parsing into entities, Telegram's error descriptions) and can misbehave
on request: error answers, 429 flood control, dropped connections, silently stalled polls,
re-delivered updates, HTML pages instead of JSON, a revoked token, and updates no real Telegram
sends (malformed, raw, media: see :mod:`sandbox.telegram_poison`).

Call its methods from the event loop's thread; it is not thread-safe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from sandbox.telegram_chats import ApiObject, ChatDirectory
from sandbox.telegram_faults import DOWNLOAD, MALFORMED_RESULT, FaultPlan, FloodControl
from sandbox.telegram_files import FileStore, MediaUpdates
from sandbox.telegram_methods import BotApiMethods
from sandbox.telegram_poison import PROXY_PAGE, UpdateFaults
from sandbox.telegram_server_faults import GET_UPDATES as GET_UPDATES
from sandbox.telegram_server_faults import ServerFaults
from sandbox.telegram_text import detect_entities, split_like_client, trim_text
from sandbox.telegram_updates import Signal, Update, UpdateQueue
from sandbox.telegram_webhook import (
    DEFAULT_RETRY_SECONDS,
    WebhookAttempt,
    WebhookPusher,
    WebhookState,
)
from sandbox.telegram_wire import ApiError, Params, int_param, ok_response, read_params

DEFAULT_UPDATE_LIMIT = 100
MAX_UPDATE_LIMIT = 100
SHUTDOWN_TIMEOUT_SECONDS = 1.0
CALLER_TAG_SEPARATOR = "~"
"""Between the bot's token and a caller tag (:meth:`TelegramEmulator.tagged_token`)."""
_POLL_CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
_WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
_POLL_ENDED_BY_WEBHOOK = "Conflict: terminated by setWebhook request"
_WEBHOOK_METHODS = frozenset({"setWebhook", "deleteWebhook"})


class TelegramEmulator(UpdateFaults, MediaUpdates, ServerFaults):
    """A local Bot API server with a scriptable world: push user messages, inspect replies."""

    def __init__(
        self,
        *,
        token: str = "123456:TEST-TOKEN",
        bot_username: str = "hermes_test_bot",
        bot_id: int = 777000,
        clock: Callable[[], float] | None = None,
        enforce_rate_limits: bool = False,
        bot_first_name: str = "Hermes",
        webhook_retry_seconds: float = DEFAULT_RETRY_SECONDS,
    ) -> None:
        self.token = token
        self.bot_username = bot_username
        self.bot_id = bot_id
        clock = clock or time.time
        bot_user = {
            "id": bot_id,
            "is_bot": True,
            "first_name": bot_first_name,
            "username": bot_username,
        }
        self._directory = ChatDirectory(bot_user, clock)
        self._updates = UpdateQueue()
        self._faults = FaultPlan()
        self._webhook = WebhookState(clock)
        self._api = BotApiMethods(
            self._directory,
            self._updates,
            FloodControl(clock) if enforce_rate_limits else None,
            self._webhook,
        )
        self.files = FileStore()
        """Files users sent (``files.downloads``: what the bot downloaded)."""
        self._api.register("getFile", self.files.get_file)
        self.live = self._api.live
        self.voices = self._api.voices
        """Voice messages the bot sent (``voices.sent``: audio, decoded length, caption)."""
        """Drafts and edits with their times (``live.drafts_in(chat)``, ``live.edits_in``)."""
        self.calls: list[tuple[str, Params]] = []
        """Every API call in arrival order: (method name as the API spells it, decoded params)."""
        self.callers: list[tuple[str, str, float]] = []
        """Every API call in arrival order as (caller tag, method, time.monotonic()): a client
        whose token is ``tagged_token(tag)`` is told apart from the others (several gateways
        of one bot in the failover tests); untagged calls have the tag ``""``."""
        self._updates_changed = Signal()
        self._activity = Signal()  # a call arrived or was answered, or a webhook POST ended
        self._pusher = WebhookPusher(
            self._webhook,
            self._updates,
            self._updates_changed,
            on_attempt=self._activity.notify,
            retry_seconds=webhook_retry_seconds,
        )
        self._stall_until = 0.0  # time.monotonic() until which getUpdates hangs
        self.download_attempts = 0
        """File downloads asked for, served or failed."""
        self.withheld_polls = 0
        """How often a stalled getUpdates found updates waiting and held them back."""
        self._poll_generation = 0
        self._waiting_poll = 0  # generation of the poll open with nothing to deliver (0: none)
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._root_url: str | None = None

    # ----- lifecycle -------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Start serving on host:port (port 0 picks a free one; read `base_url` afterwards)."""
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle_call)
        app.router.add_route("*", "/file/bot{token}/{path:.*}", self._handle_file)
        # handler_cancellation: an abandoned long poll must not hold shutdown for its timeout.
        runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=SHUTDOWN_TIMEOUT_SECONDS
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        bound_port = runner.addresses[0][1]
        self._root_url = f"http://{host}:{bound_port}"
        self._closing = False
        await self._pusher.start()

    async def stop(self) -> None:
        """Stop serving; pending long polls are answered (empty) at once, nothing hangs."""
        self._closing = True
        self._updates_changed.notify()
        await self._pusher.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> TelegramEmulator:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        """The Bot API base as python-telegram-bot takes it; it appends the token."""
        return f"{self._require_started()}/bot"

    @property
    def base_file_url(self) -> str:
        """The file download base as python-telegram-bot takes it."""
        return f"{self._require_started()}/file/bot"

    def _require_started(self) -> str:
        if self._root_url is None:
            raise RuntimeError("TelegramEmulator is not started; await start() first")
        return self._root_url

    # ----- the world: users writing to the bot -----------------------------------------------

    def push_message(
        self,
        chat_id: int,
        text: str,
        *,
        user_id: int | None = None,
        username: str = "alice",
        first_name: str = "Alice",
        chat_type: str = "private",
        chat_title: str | None = None,
        message_thread_id: int | None = None,
        reply_to_bot: bool = False,
        entities: list[dict[str, Any]] | None = None,
        date: int | None = None,
    ) -> Update:
        """Queue an Update carrying a user's message and return it (update_id, message).

        Commands ("/new") get a bot_command entity and "@username" a mention entity, as
        Telegram adds them; pass `entities` to set them yourself. In a private chat the user id
        defaults to the chat id. A text over 4096 UTF-16 units arrives as several consecutive
        messages (as Telegram apps send a long paste); the first update is returned. ``date``
        (epoch seconds) stamps the message with a time of your choosing, e.g. a transcript's
        own time in a replay; by default it is the emulator's clock.
        """
        if chat_type == "private" and user_id is None:
            user_id = chat_id
        user = self._directory.remember_user(user_id, username, first_name)
        self._directory.open_chat(
            chat_id, chat_type, chat_title, user, forum=message_thread_id is not None
        )
        reply_to = self._bot_message_to_reply_to(chat_id) if reply_to_bot else None
        pushed = []
        for piece in split_like_client(text):
            found = entities if entities is not None else detect_entities(piece)
            piece_text, piece_entities = trim_text(piece, found)  # Telegram trims every message
            message = self._directory.add_message(
                chat_id, user, piece_text, piece_entities, message_thread_id, reply_to, date=date
            )
            pushed.append(self._updates.push("message", message))
        self._updates_changed.notify()
        return pushed[0]

    def _bot_message_to_reply_to(self, chat_id: int) -> ApiObject:
        earlier = self._directory.last_message_from(chat_id, self.bot_id)
        if earlier is None:  # the test did not let the bot speak yet: invent its last words
            earlier = self._directory.add_message(chat_id, self._directory.bot_user, "…", [])
        return earlier

    def press_button(
        self,
        chat_id: int,
        message_id: int,
        data: str,
        *,
        user_id: int | None = None,
        username: str = "alice",
        first_name: str = "Alice",
    ) -> Update:
        """Queue a ``callback_query`` update: the user pressed the button carrying ``data`` on
        the bot's message ``message_id`` (KeyError if it has no such button now). In a private
        chat the user id defaults to the chat id."""
        message = self._directory.find_message(chat_id, message_id)
        if message is None:
            raise KeyError(f"no message {message_id} in chat {chat_id}")
        if user_id is None and chat_id > 0:
            user_id = chat_id
        user = self._directory.remember_user(user_id, username, first_name)
        query = self._api.callbacks.press(message, data, user, f"ci{chat_id}")
        update = self._updates.push("callback_query", query)
        self._updates_changed.notify()
        return update

    @property
    def callback_answers(self) -> list[dict[str, Any]]:
        """Every answerCallbackQuery the bot made: callback_query_id, text, show_alert."""
        return list(self._api.callbacks.answers)

    @property
    def markup_edits(self) -> list[dict[str, Any]]:
        """Every editMessageReplyMarkup: chat_id, message_id, reply_markup (None: removed)."""
        return list(self._api.callbacks.markup_edits)

    def open_callback_queries(self) -> list[str]:
        """Ids of presses the bot has not answered yet."""
        return list(self._api.callbacks.open)

    def message(self, chat_id: int, message_id: int) -> dict[str, Any] | None:
        """The chat's message as it is now (text, reply_markup), None if absent or deleted."""
        return self._directory.find_message(chat_id, message_id)

    def redeliver(self, update_id: int) -> None:
        """Queue an already pushed update again under the same update_id, as a broken server
        would; it is delivered once more even if the bot confirmed it. KeyError if unknown."""
        self._updates.redeliver(update_id)
        self._updates_changed.notify()

    # ----- what the bot did ------------------------------------------------------------------

    def sent_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """Messages the bot sent, oldest first: the API Message plus chat_id, parse_mode,
        message_thread_id, reply_to_message_id and source_text (the text before parsing).
        Edits update the record in place; deleted ones are marked ``deleted``."""
        if chat_id is None:
            return list(self._api.sent)
        return list(self._api.sent_by_chat.get(chat_id, []))

    async def wait_for_sent(
        self,
        chat_id: int,
        count: int,
        timeout: float = 10.0,  # noqa: ASYNC109 - the public API names it so
    ) -> list[dict[str, Any]]:
        """Wait until at least `count` messages were sent to `chat_id` and return them all.

        Raises TimeoutError listing what was sent if they do not arrive in time.
        """
        deadline = time.monotonic() + timeout
        while len(sent := self.sent_messages(chat_id)) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                texts = [message["text"] for message in sent]
                raise TimeoutError(
                    f"expected {count} message(s) to chat {chat_id}, got {len(sent)}: {texts!r}"
                )
            await self._activity.wait(remaining)
        return sent

    @property
    def chat_actions(self) -> list[tuple[int, str]]:
        """(chat_id, action) of every sendChatAction, in order."""
        return self._api.chat_actions

    @property
    def commands(self) -> list[dict[str, Any]]:
        """The command list of the last setMyCommands."""
        return self._api.commands

    @property
    def webhook_url(self) -> str:
        """The URL of the last setWebhook ("" when none)."""
        return self._api.webhook_url

    @property
    def webhook_attempts(self) -> list[WebhookAttempt]:
        """Every POST of an update to the webhook so far (status, or the error)."""
        return list(self._pusher.attempts)

    def webhook_info(self) -> dict[str, Any]:
        """What getWebhookInfo answers now (pending_update_count, last_error_message, ...)."""
        return self._webhook.info(self._updates)

    async def wait_for_webhook_attempts(
        self,
        count: int,
        timeout: float = 10.0,  # noqa: ASYNC109 - same shape as wait_for_sent
        *,
        succeeded: bool = False,
    ) -> list[WebhookAttempt]:
        """Wait until `count` webhook POSTs were made (only 2xx ones with `succeeded`) and
        return those; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            seen = [a for a in self._pusher.attempts if a.succeeded or not succeeded]
            if len(seen) >= count:
                return seen
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"expected {count} webhook POST(s), got {len(seen)}")
            await self._activity.wait(remaining)

    def all_taken(self) -> bool:
        """Whether the bot has taken every update: none waits for it and none is being handed
        over (webhook: no POST in flight; polling: the bot's newest getUpdates is open with
        nothing to deliver, so it finished with the batch before)."""
        if self._updates.pending_count():
            return False
        if self._api.webhook_url:
            return not self._pusher.posting
        return self._waiting_poll == self._poll_generation != 0

    async def wait_until_all_taken(
        self,
        timeout: float = 10.0,  # noqa: ASYNC109 - same shape as wait_for_sent
    ) -> None:
        """Wait until :meth:`all_taken`; TimeoutError otherwise."""
        await self._wait_until(self.all_taken, timeout, "the bot to take every update")

    async def wait_for_withheld_polls(
        self,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 - same shape as wait_for_sent
    ) -> None:
        """Wait until stalled polls held back waiting updates `count` times (see
        :meth:`stall_polls`); TimeoutError otherwise."""
        await self._wait_until(
            lambda: self.withheld_polls >= count, timeout, f"{count} withheld poll(s)"
        )

    async def _wait_until(
        self,
        condition: Callable[[], bool],
        timeout: float,  # noqa: ASYNC109 - same shape as wait_for_sent
        what: str,
    ) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"waited {timeout} s for {what}")
            await self._activity.wait(remaining)

    @property
    def confirmed_offset(self) -> int:
        """The highest getUpdates offset the client sent (everything below it is confirmed)."""
        return self._updates.confirmed_offset

    def calls_of(self, method: str) -> list[Params]:
        """Parameters of every call of one method, in order."""
        return [params for name, params in self.calls if name.lower() == method.lower()]

    async def wait_for_calls(
        self,
        method: str,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 - same shape as wait_for_sent
    ) -> list[Params]:
        """Wait until `method` was called at least `count` times (answered or still pending,
        e.g. a long poll) and return the parameters of those calls; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while len(seen := self.calls_of(method)) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"expected {count} call(s) of {method}, got {len(seen)}")
            await self._activity.wait(remaining)
        return seen

    # ----- misbehaviour ----------------------------------------------------------------------

    # ----- HTTP ------------------------------------------------------------------------------

    def tagged_token(self, tag: str) -> str:
        """The bot's token as one client of several uses it, so :attr:`callers` names it."""
        return f"{self.token}{CALLER_TAG_SEPARATOR}{tag}"

    def _caller(self, token: str) -> str | None:
        """The caller tag of ``token`` ("" untagged), None when it is not the bot's token."""
        if token == self.token:
            return ""
        base, separator, tag = token.partition(CALLER_TAG_SEPARATOR)
        return tag if separator and base == self.token and tag else None

    async def _handle_call(self, request: web.Request) -> web.StreamResponse:
        caller = self._caller(request.match_info["token"])
        if caller is None:
            return ApiError(401, "Unauthorized").to_response()
        requested = request.match_info["method"]
        method = GET_UPDATES if requested.lower() == "getupdates" else None
        method = method or self._api.canonical_name(requested)
        try:
            params = await read_params(request)
        except ApiError as error:
            return error.to_response()
        self.calls.append((method or requested, params))
        self.callers.append((caller, method or requested, time.monotonic()))
        self._activity.notify()
        if method is None:
            return ApiError(404, "Not Found").to_response()
        chat_id = _chat_of(params)
        if self._faults.take_drop(method, chat_id):
            if request.transport is not None:
                request.transport.close()
            return web.Response()  # never written: the connection is already gone
        if self._faults.take_html_body(method):
            return web.Response(text=PROXY_PAGE, content_type="text/html")
        if self._faults.take_malformed(method):
            return ok_response(MALFORMED_RESULT)
        fault = self._faults.take_fault(method, chat_id)
        if fault is not None:
            return fault.to_response()
        try:
            if method == GET_UPDATES:
                result: Any = await self._get_updates(params)
            else:
                result = self._api.call(method, params)
        except ApiError as error:
            return error.to_response()
        if method in _WEBHOOK_METHODS:
            self._updates_changed.notify()  # start (or stop) pushing, end a running long poll
        self._activity.notify()
        return ok_response(result)

    async def _handle_file(self, request: web.Request) -> web.Response:
        if self._caller(request.match_info["token"]) is None:
            return ApiError(401, "Unauthorized").to_response()
        self.download_attempts += 1
        if self._faults.take_drop(DOWNLOAD):
            if request.transport is not None:
                request.transport.close()
            return web.Response()  # never written: the connection is already gone
        fault = self._faults.take_fault(DOWNLOAD)
        if fault is not None:
            return fault.to_response()
        data = self.files.download(request.match_info["path"])
        if data is None:
            return ApiError(404, "Not Found").to_response()
        return web.Response(body=data, content_type="application/octet-stream")

    async def _get_updates(self, params: Params) -> list[Update]:
        """Long poll: answer as soon as updates exist, else after `timeout` seconds."""
        if self._api.webhook_url:
            raise ApiError(409, _WEBHOOK_CONFLICT)
        offset = int_param(params, "offset", 0)
        limit = min(max(int_param(params, "limit", DEFAULT_UPDATE_LIMIT), 1), MAX_UPDATE_LIMIT)
        timeout = max(int_param(params, "timeout", 0), 0)
        self._updates.confirm(offset)
        self._updates.set_allowed_types(params.get("allowed_updates"))
        # A newer poll ends an older one, as Telegram does when two bot instances run.
        self._poll_generation += 1
        generation = self._poll_generation
        self._updates_changed.notify()
        deadline = time.monotonic() + timeout
        while not self._closing:
            now = time.monotonic()
            if generation != self._poll_generation:
                raise ApiError(409, _POLL_CONFLICT)
            if self._api.webhook_url:
                raise ApiError(409, _POLL_ENDED_BY_WEBHOOK)
            if now < self._stall_until:
                if self._updates.pending_count():
                    self.withheld_polls += 1
                    self._activity.notify()
                await self._updates_changed.wait(self._stall_until - now)
                continue
            batch = self._updates.take(limit)
            if batch or now >= deadline:
                return batch
            self._waiting_poll = generation
            self._activity.notify()
            try:
                await self._updates_changed.wait(deadline - now)
            finally:
                if self._waiting_poll == generation:
                    self._waiting_poll = 0
        return []


def _chat_of(params: Params) -> int | None:
    """The call's ``chat_id`` as a number (None when absent or not numeric, e.g. @channel)."""
    try:
        return int(str(params.get("chat_id")))
    except ValueError:
        return None
