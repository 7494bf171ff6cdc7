"""The durable store: sessions, messages, compactions, API usage and inbound messages.

Open it with :func:`open_store` (which applies the alembic migrations) and query it only
through :class:`Repository`::

    store = await open_store(default_database_url(hermes_home))
    repo = Repository(store)
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    ...
    await store.close()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.store.db import Store, default_database_url, open_store, upgrade_database
    from gateway.store.records import (
        CompactionRecord,
        InboundRecord,
        MessageRecord,
        SessionRecord,
        SessionSummary,
        UsageTotals,
    )
    from gateway.store.repository import NotFoundError, Repository, StoreError

_HOMES = {
    "Store": "db",
    "default_database_url": "db",
    "open_store": "db",
    "upgrade_database": "db",
    "CompactionRecord": "records",
    "InboundRecord": "records",
    "MessageRecord": "records",
    "SessionRecord": "records",
    "SessionSummary": "records",
    "UsageTotals": "records",
    "NotFoundError": "repository",
    "Repository": "repository",
    "StoreError": "repository",
}
"""Where each public name lives. They are imported on first use (PEP 562), so a module of the
package that needs no SQLAlchemy (locations, sqlite_listing) can be imported without it."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "CompactionRecord",
    "InboundRecord",
    "MessageRecord",
    "NotFoundError",
    "Repository",
    "SessionRecord",
    "SessionSummary",
    "Store",
    "StoreError",
    "UsageTotals",
    "default_database_url",
    "open_store",
    "upgrade_database",
]
