"""The daemon's housekeeping: quarantined updates past their retention are deleted at each
start and then daily (not work anyone waits for)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from gateway.messages.failures import failure_summary
from gateway.store.ports import LifecycleStore

log = logging.getLogger(__name__)

DEAD_LETTER_PRUNE_SECONDS = 24 * 3600.0
"""How often quarantined updates past their retention are deleted (also at each start)."""


async def prune_dead_letters(repo: LifecycleStore, days: int) -> int:
    """Delete quarantined updates older than ``days``; returns how many."""
    pruned = await repo.prune_dead_letters(datetime.now(UTC) - timedelta(days=days))
    if pruned:
        log.info("deleted %d quarantined update(s) older than %d days", pruned, days)
    return pruned


async def prune_dead_letters_daily(repo: LifecycleStore, days: int) -> None:
    """Prune now and every :data:`DEAD_LETTER_PRUNE_SECONDS`; a database that is down is
    tried again next time."""
    while True:
        try:
            await prune_dead_letters(repo, days)
        except Exception as exc:
            log.warning("quarantine not pruned: %s", failure_summary(exc))
        await asyncio.sleep(DEAD_LETTER_PRUNE_SECONDS)
