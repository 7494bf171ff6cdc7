"""Webhook delivery for the Telegram emulator, with the Bot API's semantics.

While a webhook is set, getUpdates is refused and every waiting update is POSTed as JSON to the
webhook URL, with the header ``X-Telegram-Bot-Api-Secret-Token`` when setWebhook was given a
secret. An update leaves the queue only when the webhook answered 2xx; any other answer, a refused
connection or a timeout is retried after a pause and shown by getWebhookInfo
(``last_error_date``, ``last_error_message``, ``pending_update_count``). Updates of one chat go
one at a time and in order; different chats are delivered in parallel up to ``max_connections``.

Deviations from Telegram, for local use: plain ``http://`` URLs and any port are accepted (there
is no TLS on 127.0.0.1), and the retry pause is a fixed, configurable interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from sandbox.telegram_chats import ApiObject
from sandbox.telegram_updates import Signal, Update, UpdateQueue
from sandbox.telegram_wire import Params, bad_request

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
DEFAULT_MAX_CONNECTIONS = 40
MIN_MAX_CONNECTIONS = 1
MAX_MAX_CONNECTIONS = 100
MAX_SECRET_LENGTH = 256
DEFAULT_RETRY_SECONDS = 1.0
"""Pause before a failed delivery is tried again (Telegram backs off; tests want it short)."""
DEFAULT_DELIVERY_TIMEOUT_SECONDS = 10.0
IDLE_WAIT_SECONDS = 60.0
"""How long the delivery loop sleeps when nothing changes (every change wakes it anyway)."""
_SECRET_CHARACTERS = re.compile(r"[A-Za-z0-9_-]+")
_HTTP_SCHEMES = ("http", "https")
_BAD_URL = "bad webhook: An HTTPS URL must be provided for webhook"

Lane = int | None
"""The chat an update belongs to (None for updates without a chat); one delivery per lane."""


@dataclass(frozen=True, slots=True)
class WebhookAttempt:
    """One POST of an update to the webhook: its HTTP status, or why there was none."""

    update_id: int
    url: str
    status: int | None
    error: str | None

    @property
    def succeeded(self) -> bool:
        """Whether the webhook took the update (a 2xx answer)."""
        return self.error is None


class WebhookState:
    """What setWebhook stored, and the last delivery error getWebhookInfo reports."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.url = ""
        self.secret_token: str | None = None
        self.max_connections = DEFAULT_MAX_CONNECTIONS
        self.last_error_date: int | None = None
        self.last_error_message: str | None = None
        self.generation = 0
        """Bumped by every setWebhook/deleteWebhook, so pending retries start over at once."""

    def configure(self, params: Params) -> None:
        """Apply setWebhook's url, secret_token and max_connections (Telegram's 400s)."""
        url = str(params.get("url") or "")
        if url:
            parts = urlsplit(url)
            if parts.scheme not in _HTTP_SCHEMES or not parts.hostname:
                raise bad_request(_BAD_URL)
        secret = params.get("secret_token")
        secret = str(secret) if secret else None
        if secret is not None and len(secret) > MAX_SECRET_LENGTH:
            raise bad_request("secret token is too long")
        if secret is not None and not _SECRET_CHARACTERS.fullmatch(secret):
            raise bad_request("secret token contains unallowed characters")
        connections = params.get("max_connections")
        if not isinstance(connections, int) or isinstance(connections, bool):
            connections = DEFAULT_MAX_CONNECTIONS
        self.url = url
        self.secret_token = secret if url else None
        self.max_connections = min(max(connections, MIN_MAX_CONNECTIONS), MAX_MAX_CONNECTIONS)
        self._forget_errors()

    def remove(self) -> None:
        """deleteWebhook: back to getUpdates."""
        self.url = ""
        self.secret_token = None
        self._forget_errors()

    def record_error(self, message: str) -> None:
        """Remember a failed delivery for getWebhookInfo."""
        self.last_error_date = int(self._clock())
        self.last_error_message = message

    def info(self, updates: UpdateQueue) -> ApiObject:
        """The WebhookInfo object; optional fields only when they have a value, as Telegram."""
        info: ApiObject = {
            "url": self.url,
            "has_custom_certificate": False,
            "pending_update_count": updates.pending_count(),
        }
        if self.url:
            info["max_connections"] = self.max_connections
            if updates.allowed_types is not None:
                info["allowed_updates"] = sorted(updates.allowed_types)
        if self.last_error_message is not None:
            info["last_error_date"] = self.last_error_date
            info["last_error_message"] = self.last_error_message
        return info

    def _forget_errors(self) -> None:
        self.generation += 1
        self.last_error_date = None
        self.last_error_message = None


class WebhookPusher:
    """Delivers the queue to the webhook while one is set; woken by the `changed` signal."""

    def __init__(
        self,
        state: WebhookState,
        updates: UpdateQueue,
        changed: Signal,
        *,
        on_attempt: Callable[[], None],
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        timeout_seconds: float = DEFAULT_DELIVERY_TIMEOUT_SECONDS,
    ) -> None:
        self._state = state
        self._updates = updates
        self._changed = changed
        self._on_attempt = on_attempt
        self._retry_seconds = retry_seconds
        self._timeout_seconds = timeout_seconds
        self.attempts: list[WebhookAttempt] = []
        """Every POST made, in order of completion."""
        self._in_flight: dict[Lane, asyncio.Task[None]] = {}
        self._retry_at: dict[Lane, float] = {}
        self._generation = state.generation
        self._loop_task: asyncio.Task[None] | None = None
        self._stopping = False
        self._session: aiohttp.ClientSession | None = None

    @property
    def posting(self) -> bool:
        """Whether a POST of an update is in flight now."""
        return bool(self._in_flight)

    async def start(self) -> None:
        """Start the delivery loop (it idles while no webhook is set)."""
        timeout = aiohttp.ClientTimeout(total=self._timeout_seconds)
        self._session = aiohttp.ClientSession(timeout=timeout)
        self._stopping = False
        self._loop_task = asyncio.create_task(self._run(), name="telegram-emulator-webhook")

    async def stop(self) -> None:
        """Stop delivering; a POST in flight is abandoned and its update stays queued."""
        # The flag as well as the cancel: on Python 3.11, asyncio.wait_for (inside Signal.wait)
        # swallows a cancel that arrives just as the signal fires.
        self._stopping = True
        tasks = [*self._in_flight.values()]
        if self._loop_task is not None:
            tasks.append(self._loop_task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._in_flight.clear()
        self._loop_task = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _run(self) -> None:
        while not self._stopping:
            self._launch_ready()
            await self._changed.wait(self._until_next_retry())

    def _launch_ready(self) -> None:
        """Start one delivery for every lane that is free, oldest update of the lane first."""
        if self._state.generation != self._generation:
            self._generation = self._state.generation
            self._retry_at.clear()  # a new webhook (or URL) is tried at once
        if not self._state.url:
            return
        now = time.monotonic()
        seen: set[Lane] = set()
        for update in self._updates.deliverable():
            lane = _lane_of(update)
            if lane in seen:
                continue  # a later update of a chat waits for the earlier one
            seen.add(lane)
            if lane in self._in_flight or self._retry_at.get(lane, 0.0) > now:
                continue
            if len(self._in_flight) >= self._state.max_connections:
                return
            self._retry_at.pop(lane, None)
            self._in_flight[lane] = asyncio.create_task(self._deliver(lane, update))

    def _until_next_retry(self) -> float:
        now = time.monotonic()
        waits = [moment - now for moment in self._retry_at.values() if moment > now]
        return min(waits, default=IDLE_WAIT_SECONDS)

    async def _deliver(self, lane: Lane, update: Update) -> None:
        url = self._state.url
        try:
            status, error = await self._post(url, update)
            self.attempts.append(WebhookAttempt(update["update_id"], url, status, error))
            if error is None:
                self._updates.acknowledge(update)
            else:
                self._state.record_error(error)
                self._retry_at[lane] = time.monotonic() + self._retry_seconds
        finally:
            self._in_flight.pop(lane, None)
            self._changed.notify()
            self._on_attempt()

    async def _post(self, url: str, update: Update) -> tuple[int | None, str | None]:
        """POST one update; returns (status, error), error None when it was a 2xx."""
        assert self._session is not None
        secret = self._state.secret_token
        headers = {SECRET_HEADER: secret} if secret else {}
        try:
            async with self._session.post(url, json=update, headers=headers) as response:
                await response.read()
                if 200 <= response.status < 300:
                    return response.status, None
                reason = f"{response.status} {response.reason or ''}".strip()
                return response.status, f"Wrong response from the webhook: {reason}"
        except TimeoutError:
            return None, "Read timeout expired"
        except aiohttp.ClientConnectorError:
            return None, "Connection refused"
        except aiohttp.ClientError as exc:
            return None, f"Connection error: {type(exc).__name__}"


def _lane_of(update: Update) -> Lane:
    """The chat of an update's payload (a message, or the message of a callback query)."""
    for kind, payload in update.items():
        if kind == "update_id" or not isinstance(payload, dict):
            continue
        chat: Any = payload.get("chat")
        if chat is None and isinstance(payload.get("message"), dict):
            chat = payload["message"].get("chat")
        return chat.get("id") if isinstance(chat, dict) else None
    return None
