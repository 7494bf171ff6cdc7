"""Faults of the emulated Bot API server itself (mixed into the emulator): error answers, dropped
connections, a proxy's HTML page, a malformed result, a revoked token, a poll that hangs.

File downloads take the same faults under the method name ``"download"``
(:data:`sandbox.telegram_faults.DOWNLOAD`)."""

from __future__ import annotations

import time

from sandbox.telegram_faults import FaultPlan
from sandbox.telegram_updates import Signal

GET_UPDATES = "getUpdates"


class ServerFaults:
    """Fault injection for tests, on the emulator's fault plan and update signal."""

    token: str
    _faults: FaultPlan
    _stall_until: float
    _updates_changed: Signal

    def inject_fault(
        self,
        method: str,
        *,
        status: int = 500,
        count: int = 1,
        retry_after: int | None = None,
        description: str | None = None,
        chat_id: int | None = None,
    ) -> None:
        """Answer the next `count` calls of `method` ("*" for any) with an error; with
        `chat_id`, only calls for that chat (e.g. sendMessage to one user who blocked the bot).

        A 429 reads "Too Many Requests: retry after N" with parameters.retry_after, which
        python-telegram-bot raises as RetryAfter.
        """
        self._faults.add_fault(method, status, count, retry_after, description, chat_id)

    def drop_connections(
        self, method: str = GET_UPDATES, count: int = 1, *, chat_id: int | None = None
    ) -> None:
        """Close the connection of the next `count` calls of `method` (for `chat_id` only,
        when given) without any answer."""
        self._faults.add_drops(method, count, chat_id)

    def serve_html(self, method: str = GET_UPDATES, count: int = 1) -> None:
        """Answer the next `count` calls of `method` with 200 and an HTML page (a proxy's)."""
        self._faults.add_html_bodies(method, count)

    def serve_malformed(self, method: str, count: int = 1) -> None:
        """Answer the next `count` calls of `method` with ``{"ok": true}`` and a result of
        the wrong shape, as a broken server or proxy might."""
        self._faults.add_malformed(method, count)

    def revoke_token(self) -> None:
        """Revoke the bot's token, as @BotFather does: every call answers 401 from now on."""
        self.token = f"{self.token}-revoked"

    def stall_polls(self, seconds: float) -> None:
        """Make getUpdates hang for `seconds`, delivering nothing even past its timeout:
        a silently dead poll. Requests still waiting when the stall ends are served normally."""
        self._stall_until = time.monotonic() + seconds
        self._updates_changed.notify()
