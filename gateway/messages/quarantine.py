"""Quarantined updates: what a platform sent that could not be parsed or recorded.

Such an update must neither block the ones behind it (Telegram redelivers until the offset moves
past it) nor vanish. The adapter hands it to the runner as a :class:`DeadLetter`, which keeps it
raw in the store's dead-letter table with the reason, and only then moves past it. ``hermes
doctor`` and an admin's ``/status`` show how many there are.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

DETAIL_LIMIT = 2000
"""Characters of the error text kept with a dead letter."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One quarantined update.

    ``reason`` is short and safe to log (no user text, e.g. "unparseable update: KeyError");
    ``detail`` is the error text, stored but never logged; ``ref`` is the platform's id of the
    update when it has one.
    """

    platform: str
    reason: str
    raw: Any
    ref: str | None = None
    detail: str = ""

    def raw_json(self) -> str:
        """The raw update as ASCII JSON: lone surrogates and NULs survive as escapes."""
        try:
            return json.dumps(self.raw, ensure_ascii=True, sort_keys=True, default=repr)
        except ValueError:  # circular structure: keep what Python can show of it
            return json.dumps(repr(self.raw), ensure_ascii=True)

    def stored_detail(self) -> str:
        """The error text as stored: bounded, and storable whatever it contains."""
        bounded = self.detail[:DETAIL_LIMIT].replace("\x00", "\\x00")  # PostgreSQL refuses NUL
        return bounded.encode("ascii", "backslashreplace").decode("ascii")


QuarantineCallback = Callable[[DeadLetter], Awaitable[object]]
"""The runner's dead-letter entry point; returns once the update is durably kept."""


SENDER_KEYS = ("from", "author", "user", "member")
"""Keys under which Telegram (``from``) and Discord (``author``, ``user``, ``member.user``)
name a person in an update; a quarantined update is theirs when one of them is."""


def mentions_user(raw_json: str, user_id: str) -> bool:
    """Whether a quarantined update (as stored) names ``user_id`` as a sender or quoted
    author anywhere in it; False when the stored text is not readable JSON."""
    try:
        raw = json.loads(raw_json)
    except ValueError:
        return False
    return user_id in _people(raw)


def _people(value: Any) -> set[str]:
    """The ids of every person object in a JSON value (see :data:`SENDER_KEYS`)."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                if key in SENDER_KEYS and isinstance(child, dict) and "id" in child:
                    found.add(str(child["id"]))
                stack.append(child)
    return found
