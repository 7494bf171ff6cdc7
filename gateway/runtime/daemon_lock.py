"""One daemon per ``$HERMES_HOME``: ``hermes gateway run`` holds an exclusive lock on
``$HERMES_HOME/gateway.lock`` (with its pid inside) for as long as it runs.

The kernel releases the lock when the process ends however it ends (``kill -9`` included), so
a stale file never blocks a restart. ``hermes health`` and ``hermes restore`` ask the same lock
whether a daemon is running.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO

LOCK_FILE = "gateway.lock"
ACQUIRE_WAIT_SECONDS = 2.0
"""How long a starting daemon waits for a lock held for an instant by ``hermes health``."""
ACQUIRE_POLL_SECONDS = 0.05


class DaemonRunningError(RuntimeError):
    """Another process holds the daemon lock of this home."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        who = f" (pid {pid})" if pid else ""
        super().__init__(f"a gateway is already running for this HERMES_HOME{who}")


class DaemonLock:
    """The held lock; released by :meth:`release` or when the process ends."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle

    @classmethod
    def acquire(cls, home: Path) -> DaemonLock:
        """Take the lock and write this process's pid; raises DaemonRunningError when taken."""
        home.mkdir(parents=True, exist_ok=True)
        handle = open(home / LOCK_FILE, "a+", encoding="ascii")
        deadline = time.monotonic() + ACQUIRE_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _read_pid(handle)
                    handle.close()
                    raise DaemonRunningError(pid) from None
                time.sleep(ACQUIRE_POLL_SECONDS)  # a `hermes health` holds it for an instant
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        return cls(handle)

    def release(self) -> None:
        """Give the lock up (the file stays; its content no longer counts)."""
        fcntl.flock(self._handle, fcntl.LOCK_UN)
        self._handle.close()


def running_daemon(home: Path) -> int | None:
    """The pid of the daemon running for ``home`` (0 when its pid is unreadable), or None.

    Asks with a shared lock taken and given back at once, writing nothing."""
    path = home / LOCK_FILE
    if not path.exists():
        return None
    with open(path, encoding="ascii") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(handle) or 0
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _read_pid(handle: IO[str]) -> int | None:
    handle.seek(0)
    text = handle.read().strip()
    return int(text) if text.isdigit() else None
