"""The durable store: sessions, messages, compactions, API usage and inbound messages.

Open it with :func:`open_store` (which applies the alembic migrations) and query it only
through :class:`Repository`::

    store = await open_store(default_database_url(hermes_home))
    repo = Repository(store)
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")
    ...
    await store.close()
"""

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
