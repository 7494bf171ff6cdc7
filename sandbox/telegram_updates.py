"""The queue of updates waiting for a bot, with Telegram's offset confirmation semantics.

An update stays queued until the bot calls getUpdates with an offset above its update_id, or (in
webhook mode) until the webhook answered its POST with a 2xx; those are the only acknowledgements
Telegram has. `redeliver` imitates a broken server that sends a
confirmed update again under the same update_id.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

Update = dict[str, Any]

FIRST_UPDATE_ID = 500_000_001
"""Real update ids are large numbers; starting high catches code that assumes small ones."""


class Signal:
    """A broadcast wake-up for coroutines waiting on some state change."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        """Wake everyone currently waiting."""
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, at_most: float) -> None:
        """Return at the next notify, or after `at_most` seconds, whichever comes first."""
        event = self._event
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), max(at_most, 0.0))


class UpdateQueue:
    """Updates not yet confirmed by the bot, plus forced re-deliveries."""

    def __init__(self) -> None:
        self._next_update_id = FIRST_UPDATE_ID
        self._pending: list[Update] = []
        self._forced: list[Update] = []
        self._history: dict[int, Update] = {}
        self.confirmed_offset = 0
        self.allowed_types: frozenset[str] | None = None

    def push(self, kind: str, payload: dict[str, Any]) -> Update:
        """Queue a new update of type `kind` ("message", ...) and return it."""
        update: Update = {"update_id": self._next_update_id, kind: payload}
        self._next_update_id += 1
        self._pending.append(update)
        self._history[update["update_id"]] = update
        return update

    def redeliver(self, update_id: int) -> None:
        """Send an already pushed update again with the same id, even if it was confirmed."""
        self._forced.append(self._history[update_id])

    def confirm(self, offset: int) -> None:
        """Apply getUpdates' offset: positive confirms everything below it, negative keeps the
        last -offset updates and forgets the rest."""
        if offset > 0:
            self.confirmed_offset = max(self.confirmed_offset, offset)
            self._pending = [update for update in self._pending if update["update_id"] >= offset]
        elif offset < 0:
            self._pending = self._pending[offset:]

    def set_allowed_types(self, allowed: Iterable[str] | None) -> None:
        """Remember allowed_updates; an empty list means every type again, as in Telegram."""
        if allowed is not None:
            self.allowed_types = frozenset(allowed) or None

    def clear(self) -> None:
        """Drop every pending update (drop_pending_updates)."""
        self._pending.clear()
        self._forced.clear()

    def pending_count(self) -> int:
        """How many updates wait for the bot."""
        return len(self._pending) + len(self._forced)

    def take(self, limit: int) -> list[Update]:
        """Return up to `limit` updates to deliver now.

        Forced re-deliveries come first and are sent once; regular updates stay queued until
        confirmed, so the batch's last update_id is still the highest the bot has seen.
        """
        self._drop_disallowed()
        batch = self._forced[:limit]
        del self._forced[: len(batch)]
        batch.extend(self._pending[: limit - len(batch)])
        return batch

    def deliverable(self) -> list[Update]:
        """Every update waiting for a webhook, in delivery order (forced re-deliveries first).

        Nothing is removed: a webhook delivery leaves the queue only through `acknowledge`.
        """
        self._drop_disallowed()
        return [*self._forced, *self._pending]

    def acknowledge(self, update: Update) -> None:
        """The webhook answered 2xx for `update`: remove it (its forced copy first, if any)."""
        for index, queued in enumerate(self._forced):
            if queued is update:
                del self._forced[index]
                return
        self._pending = [queued for queued in self._pending if queued is not update]

    def _drop_disallowed(self) -> None:
        if self.allowed_types is not None:
            self._pending = [update for update in self._pending if self._allowed(update)]

    def _allowed(self, update: Update) -> bool:
        kinds = set(update) - {"update_id"}
        return self.allowed_types is None or bool(kinds & self.allowed_types)
