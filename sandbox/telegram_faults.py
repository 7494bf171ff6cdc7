"""Misbehaviour a Telegram emulator can be told to show: error answers, dropped connections,
HTML pages instead of JSON (a proxy in the way), and Telegram's flood control."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from sandbox.telegram_wire import ApiError

ANY_METHOD = "*"
"""Method name that makes a fault apply to whichever method is called next."""
DOWNLOAD = "download"
"""The name faults use for a file download (``/file/bot<token>/<path>``), beside methods."""
MALFORMED_RESULT = "not an object"
"""An "ok" answer's result of the wrong shape (a broken proxy or server)."""

GLOBAL_MESSAGES_PER_SECOND = 30
GROUP_MESSAGES_PER_MINUTE = 20
_SECOND = 1.0
_MINUTE = 60.0
DEFAULT_RETRY_AFTER = 1

_DEFAULT_DESCRIPTIONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden: bot was blocked by the user",
    404: "Not Found",
    409: "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running",
    500: "Internal Server Error",
}


def too_many_requests(retry_after: int) -> ApiError:
    """The 429 answer Telegram gives when a bot floods, carrying retry_after."""
    return ApiError(
        429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after}
    )


@dataclass
class _Fault:
    status: int
    description: str | None
    retry_after: int | None
    remaining: int
    chat_id: int | None = None
    """Only calls for this chat (their ``chat_id`` parameter) meet the fault; None: any call."""

    def hits(self, chat_id: int | None) -> bool:
        return self.chat_id is None or self.chat_id == chat_id


class FaultPlan:
    """Faults queued per method name (case-insensitive, "*" for any), consumed one per call;
    a fault or drop planned for one chat meets only calls for that chat."""

    def __init__(self) -> None:
        self._faults: dict[str, list[_Fault]] = {}
        self._drops: dict[tuple[str, int | None], int] = {}
        self._html_bodies: dict[str, int] = {}
        self._malformed: dict[str, int] = {}

    def add_fault(
        self,
        method: str,
        status: int,
        count: int,
        retry_after: int | None,
        description: str | None,
        chat_id: int | None = None,
    ) -> None:
        """Answer the next `count` calls of `method` (for `chat_id`) with this error."""
        if status == HTTPStatus.TOO_MANY_REQUESTS and retry_after is None:
            retry_after = DEFAULT_RETRY_AFTER
        fault = _Fault(status, description, retry_after, count, chat_id)
        self._faults.setdefault(method.lower(), []).append(fault)

    def add_drops(self, method: str, count: int, chat_id: int | None = None) -> None:
        """Close the connection of the next `count` calls of `method` (for `chat_id`)
        without answering."""
        key = (method.lower(), chat_id)
        self._drops[key] = self._drops.get(key, 0) + count

    def take_drop(self, method: str, chat_id: int | None = None) -> bool:
        """Whether this call's connection is to be dropped (consumes one drop)."""
        for name in (method.lower(), ANY_METHOD):
            for key in ((name, chat_id), (name, None)):
                if self._drops.get(key, 0) > 0:
                    self._drops[key] -= 1
                    return True
        return False

    def add_html_bodies(self, method: str, count: int) -> None:
        """Answer the next `count` calls of `method` with 200 and an HTML page."""
        key = method.lower()
        self._html_bodies[key] = self._html_bodies.get(key, 0) + count

    def add_malformed(self, method: str, count: int) -> None:
        """Answer the next `count` calls of `method` "ok" with a result of the wrong shape."""
        key = method.lower()
        self._malformed[key] = self._malformed.get(key, 0) + count

    def take_malformed(self, method: str) -> bool:
        """Whether this call gets a malformed result (consumes one)."""
        return _take_one(self._malformed, method)

    def take_html_body(self, method: str) -> bool:
        """Whether this call is to be answered with an HTML page (consumes one)."""
        return _take_one(self._html_bodies, method)

    def take_fault(self, method: str, chat_id: int | None = None) -> ApiError | None:
        """The error to answer this call with, if one is planned (consumes it)."""
        for key in (method.lower(), ANY_METHOD):
            fault = next((f for f in self._faults.get(key, []) if f.hits(chat_id)), None)
            if fault is not None:
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults[key].remove(fault)
                return _as_error(fault)
        return None


def _take_one(counts: dict[str, int], method: str) -> bool:
    for key in (method.lower(), ANY_METHOD):
        if counts.get(key, 0) > 0:
            counts[key] -= 1
            return True
    return False


def _as_error(fault: _Fault) -> ApiError:
    if fault.status == HTTPStatus.TOO_MANY_REQUESTS and fault.description is None:
        return too_many_requests(fault.retry_after or DEFAULT_RETRY_AFTER)
    description = fault.description or _DEFAULT_DESCRIPTIONS.get(fault.status)
    if description is None:
        try:
            description = HTTPStatus(fault.status).phrase
        except ValueError:
            description = "Error"
    parameters = {"retry_after": fault.retry_after} if fault.retry_after is not None else None
    return ApiError(fault.status, description, parameters)


class FloodControl:
    """Telegram's undocumented send limits: ~30 messages/s overall, 20/min per group chat."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._recent: deque[float] = deque()
        self._recent_by_group: dict[int, deque[float]] = {}

    def admit(self, chat_id: int, is_group: bool) -> None:
        """Count one message to `chat_id`, or raise a 429 with how long to wait."""
        now = self._clock()
        group_window = self._recent_by_group.setdefault(chat_id, deque()) if is_group else None
        _expire(self._recent, now - _SECOND)
        if len(self._recent) >= GLOBAL_MESSAGES_PER_SECOND:
            raise too_many_requests(_wait_until(self._recent[0] + _SECOND, now))
        if group_window is not None:
            _expire(group_window, now - _MINUTE)
            if len(group_window) >= GROUP_MESSAGES_PER_MINUTE:
                raise too_many_requests(_wait_until(group_window[0] + _MINUTE, now))
            group_window.append(now)
        self._recent.append(now)


def _expire(window: deque[float], horizon: float) -> None:
    while window and window[0] <= horizon:
        window.popleft()


def _wait_until(moment: float, now: float) -> int:
    return max(1, math.ceil(moment - now))
