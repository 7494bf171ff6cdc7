"""Telegram long polling that cannot die: getUpdates, confirm, watchdog, backoff.

Our own loop over the raw getUpdates answer rather than PTB's ``Updater`` (which confirms an
update as soon as it is queued, before any handler ran) or ``Bot.get_updates`` (which parses the
whole batch at once, so one bad update fails every update with it, forever). Each update is
handed to the intake, which records or quarantines it, and only then is the offset moved past
it.

Every failure is caught at the loop, logged once with its cause (repeats of the same cause are
not logged again until polling recovers) and followed by a growing pause. A rejected token is
checked with getMe; when Telegram confirms it a few times in a row, polling stops for good
with a :class:`~gateway.platforms.base.PlatformAuthError`. The supervisor restarts a poll that went
silent (the watchdog) and one that ended in any other way.

Retries of getUpdates: a 429 is waited out inside the request by the bot's rate limiter
(``RATE_LIMIT_RETRIES`` times, then here for its ``retry_after``); any other failure is
retried by this loop alone, without end, after a pause doubling from
:data:`FIRST_RETRY_SECONDS` (0.5 s) to :data:`MAX_RETRY_SECONDS` (10 s). Each long poll lasts
``poll_timeout`` (30 s) plus a 5 s read margin; the watchdog restarts one silent past
``watchdog_seconds`` (120 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Bot
from telegram.error import EndPointNotFound, InvalidToken, RetryAfter, TelegramError
from telegram.warnings import PTBUserWarning

from agent.retries import doubling, nth_wait
from gateway.platforms.base import PlatformAuthError
from gateway.platforms.telegram.settings import TelegramSettings

log = logging.getLogger(__name__)

ALLOWED_UPDATES = ("message", "callback_query")
"""Messages, and presses of approval prompts' buttons."""
"""The update types we handle, asked of getUpdates and setWebhook alike."""
GET_UPDATES_READ_MARGIN_SECONDS = 5.0
"""Read timeout of a long poll beyond its own ``timeout``."""
WATCHDOG_MIN_SLACK_SECONDS = 1.0
"""The watchdog never fires before an idle long poll (``poll_timeout``) plus this could end."""
FIRST_RETRY_SECONDS = 0.5
"""Pause after the first failure; it doubles with each failure in a row..."""
MAX_RETRY_SECONDS = 10.0
"""...up to this, so polling is back within seconds of the fault ending."""
PAUSES = doubling(FIRST_RETRY_SECONDS, MAX_RETRY_SECONDS)
"""The pause after each failure in a row (the project's retry policy, :mod:`agent.retries`)."""
TOKEN_REJECTIONS_TO_STOP = 3
"""getUpdates and getMe both answering 401 this many times in a row (over a few seconds of
backoff) means the token is revoked, not that a proxy answered 401 for a moment."""
TOKEN_REJECTED_CAUSE = "401 Unauthorized: the bot token was rejected"
CAUSE_LIMIT = 200
"""Characters of an error's text in the log line."""

# getUpdates is fetched raw (see the module docstring); PTB suggests its parsing method instead.
warnings.filterwarnings("ignore", message="Please use 'Bot.getUpdates'", category=PTBUserWarning)

UpdateTaker = Callable[[Any], Awaitable[None]]


def describe(exc: BaseException, *, with_text: bool = True) -> str:
    """An error for the log: its type, and (when it cannot quote user text) its message."""
    text = str(exc).strip() if with_text else ""
    return f"{type(exc).__name__}: {text[:CAUSE_LIMIT]}" if text else type(exc).__name__


def is_token_rejection(exc: BaseException) -> bool:
    """401: PTB raises InvalidToken, or (from a raw request once initialized) EndPointNotFound."""
    return isinstance(exc, InvalidToken) or (
        isinstance(exc, EndPointNotFound) and isinstance(exc.__cause__, InvalidToken)
    )


class RetryBackoff:
    """Failures of one operation in a row: logged once per cause, pauses growing to a cap.

    Not a tenacity retry of one call: the loops it serves never end, a success resets the
    streak, and a failed hand-over is retried by the next getUpdates; only the pauses come
    from the shared policy (:data:`PAUSES`).
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.failures = 0
        self._cause: str | None = None
        self._since = 0.0

    def failed(self, cause: str) -> float:
        """Count a failure (logging it when the cause is new); returns the pause before retrying."""
        if self.failures == 0:
            self._since = time.monotonic()
        self.failures += 1
        if cause != self._cause:
            self._cause = cause
            log.warning("telegram: %s failed (%s); retrying", self.what, cause)
        return nth_wait(PAUSES, self.failures)

    def succeeded(self) -> None:
        """The operation worked again: say so once if it had been failing."""
        if self.failures:
            log.info(
                "telegram: %s works again after %d failed attempt(s) in %.0f s",
                self.what,
                self.failures,
                time.monotonic() - self._since,
            )
        self.failures = 0
        self._cause = None


class Poller:
    """Long-polls getUpdates for one bot until stopped, or until its token is revoked."""

    def __init__(
        self,
        bot: Callable[[], Bot],
        settings: TelegramSettings,
        take: UpdateTaker,
        on_token_revoked: Callable[[PlatformAuthError], None],
        gate: Callable[[], None] | None = None,
    ) -> None:
        self._bot = bot
        self._gate = gate
        """The runner's send gate (failover), run before each getUpdates: python-telegram-bot
        sends getUpdates past the rate limiter, where the gate of every other call sits."""
        self._settings = settings
        self._take = take
        self._on_token_revoked = on_token_revoked
        self.offset = 0
        self.restarts = 0
        """How often the watchdog restarted a silent poll."""
        self._poll_started: float | None = None
        """When the getUpdates in flight was sent (None while handling updates)."""
        self._supervisor: asyncio.Task[None] | None = None
        self._fetching = RetryBackoff("getUpdates")
        self._rejections = 0
        """Token rejections confirmed by getMe in a row."""
        self._handing_over = RetryBackoff("handing over an update")

    def start(self) -> None:
        """Start polling in the background."""
        self._supervisor = asyncio.create_task(self._supervise(), name="telegram-polling")

    @property
    def running(self) -> bool:
        return self._supervisor is not None and not self._supervisor.done()

    async def stop(self) -> None:
        """Stop polling and confirm the offset of what was handled (best effort)."""
        if self._supervisor is None:
            return
        self._supervisor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._supervisor
        self._supervisor = None
        with contextlib.suppress(Exception):  # stopping: Telegram sends unconfirmed ones again
            await self._fetch(poll_seconds=0, limit=1)

    # -- supervisor and watchdog -----------------------------------------------------------

    async def _supervise(self) -> None:
        """Run the poll loop; restart it when it went silent or ended, whatever the reason."""
        restarts = RetryBackoff("polling")
        while True:
            try:
                if await self._run_once():
                    return
                restarts.succeeded()
            except Exception as exc:  # the supervisor itself must never end
                await asyncio.sleep(restarts.failed(describe(exc)))

    async def _run_once(self) -> bool:
        """One poll loop until it stalls or ends; True when polling must stop for good."""
        poller = asyncio.create_task(self._poll_loop(), name="telegram-getupdates")
        try:
            await self._watch(poller)
        finally:
            if not poller.done():
                poller.cancel()
            # wait() never raises the task's exception (awaiting the task would).
            await asyncio.wait({poller})
        if poller.cancelled():
            return False
        error = poller.exception()
        if isinstance(error, PlatformAuthError):
            self._on_token_revoked(error)
            return True
        if error is not None:
            raise error
        return False

    async def _watch(self, poller: asyncio.Task[None]) -> None:
        """Return when the poll loop ended, or when its getUpdates has been silent too long."""
        check_every = min(self._settings.watchdog_seconds / 4, 5.0)
        while not poller.done():
            await asyncio.wait({poller}, timeout=check_every)
            # Only a getUpdates that has not come back counts as silence: time spent handling
            # an update (recording it) must never get the loop cancelled.
            waiting_since = self._poll_started
            silent = 0.0 if waiting_since is None else time.monotonic() - waiting_since
            if not poller.done() and silent > self._watchdog_limit():
                log.warning("telegram: getUpdates silent for %.0f s; restarting polling", silent)
                self.restarts += 1
                return

    def _watchdog_limit(self) -> float:
        """Silence that means a dead poll: never less than an idle long poll legitimately takes."""
        idle_poll = self._settings.poll_timeout + WATCHDOG_MIN_SLACK_SECONDS
        return max(self._settings.watchdog_seconds, idle_poll)

    # -- the poll loop ---------------------------------------------------------------------

    async def _poll_loop(self) -> None:
        """getUpdates forever; each update is taken (recorded) before it is confirmed."""
        while True:
            self._poll_started = time.monotonic()
            pause: float | None = None
            try:
                updates = await self._fetch(poll_seconds=self._settings.poll_timeout)
            except RetryAfter as exc:
                pause = retry_after_seconds(exc.retry_after)
            except Exception as exc:
                cause = describe(exc)
                if is_token_rejection(exc):
                    await self._confirm_token_rejected()
                    cause = TOKEN_REJECTED_CAUSE
                pause = self._fetching.failed(cause)
            finally:
                self._poll_started = None  # a pause is not a silent poll
            if pause is not None:
                await asyncio.sleep(pause)
                continue
            self._fetching.succeeded()
            self._rejections = 0
            await self._take_all(updates)

    async def _take_all(self, updates: list[Any]) -> None:
        """Take the batch in order, confirming each; stop at one that must come again."""
        for raw in updates:
            try:
                await self._take(raw)
            except Exception as exc:
                # The error's text may quote the update (SQL parameters, the text itself).
                await asyncio.sleep(self._handing_over.failed(describe(exc, with_text=False)))
                return
            self._handing_over.succeeded()
            update_id = raw.get("update_id") if isinstance(raw, dict) else None
            if isinstance(update_id, int):
                self.offset = max(self.offset, update_id + 1)

    async def _fetch(self, *, poll_seconds: int, limit: int | None = None) -> list[Any]:
        """The raw getUpdates answer: a list of decoded JSON updates, unparsed."""
        arguments: dict[str, Any] = {
            "offset": self.offset,
            "timeout": poll_seconds,
            "allowed_updates": list(ALLOWED_UPDATES),
        }
        if limit is not None:
            arguments["limit"] = limit
        if self._gate is not None:
            self._gate()
        result = await self._bot().do_api_request(
            "getUpdates",
            api_kwargs=arguments,
            read_timeout=poll_seconds + GET_UPDATES_READ_MARGIN_SECONDS,
        )
        if not isinstance(result, list):
            raise TelegramError(f"getUpdates answered a {type(result).__name__}, not a list")
        return result

    async def _confirm_token_rejected(self) -> None:
        """Ask getMe whether the token is really rejected (not a proxy's stray 401); stop once
        it was, :data:`TOKEN_REJECTIONS_TO_STOP` times in a row."""
        try:
            await self._bot().get_me()
        except InvalidToken as again:
            self._rejections += 1
            if self._rejections >= TOKEN_REJECTIONS_TO_STOP:
                raise PlatformAuthError(token_rejected_text(self._settings.token_env)) from again
        except Exception:  # cannot tell now: treat as a transient failure
            return
        else:
            self._rejections = 0


def token_rejected_text(env_name: str) -> str:
    """The one ERROR line for a rejected Telegram token: names the variable, never the value."""
    return (
        f"Telegram rejected the bot token in {env_name} (401 Unauthorized: revoked or wrong). "
        f"Put the current token from @BotFather in {env_name} and restart."
    )


def retry_after_seconds(value: object) -> float:
    """RetryAfter.retry_after is an int or a timedelta depending on the PTB version."""
    total = getattr(value, "total_seconds", None)
    return float(total()) if callable(total) else float(value)  # type: ignore[arg-type]
