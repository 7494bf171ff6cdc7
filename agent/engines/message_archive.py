"""What a context engine may read and write of the host's store: the :class:`MessageArchive`.

Every message of every session stays stored; an engine that needs more than the context it is
handed (a lossless engine reopening old turns, a search tool) reads it here, never from the
host's tables. An engine may also keep records of its own in tables it creates through a
migration chain of its own (see ``docs/architecture.md``): it reads them with
:meth:`MessageArchive.read_records` and writes them with :meth:`MessageArchive.write_records`,
which queues the write in the host's group commit like every other write.

The host implements the protocol (``gateway.store.archive.StoreArchive``); plugins import only
this module and :mod:`agent.engines.context_engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from agent.types import Message

if TYPE_CHECKING:
    from sqlalchemy import Connection

T = TypeVar("T")

MessageKind = Literal["message", "summary", "derived", "notice"]
"""How a stored message came to be: said (``message``), a compaction's ``summary``, a
rewritten copy made by a compaction (``derived``), or a ``notice`` from the host."""

RecordJob = Callable[["Connection"], T]
"""Work on the engine's own tables: a function of a synchronous SQLAlchemy connection."""


@dataclass(frozen=True, slots=True)
class ArchivedMessage:
    """One stored message: where it sits and the chat-completions dict it holds.

    ``message`` is the dict as the context had it, with the host's bookkeeping keys
    (``"_id"``, ``"_tokens"``...) that never reach a provider.
    """

    id: int
    session_id: int
    role: str
    kind: MessageKind
    token_count: int
    created_at: datetime
    """When the host stored it (timezone-aware UTC)."""
    message: Message


@dataclass(frozen=True, slots=True)
class MessageHit:
    """A message found by :meth:`MessageArchive.search_messages`, with its searchable text."""

    id: int
    session_id: int
    role: str
    created_at: datetime
    text: str
    """The text the search matched: the content and the tool calls, as plain text."""


SkipHit = Callable[[MessageHit], bool]
"""Says which search hits the caller does not want (e.g. an engine's own rendered summaries)."""


class MessageArchive(Protocol):
    """The host's store as an engine sees it: messages by session, range and id, full-text
    search over them, and the engine's own records."""

    @property
    def dialect_name(self) -> str:
        """The database behind it, ``"sqlite"`` or ``"postgresql"``, for the engine's own SQL."""
        ...

    async def session_messages(
        self, session_id: int, first_id: int | None = None, last_id: int | None = None
    ) -> list[ArchivedMessage]:
        """The session's stored messages with ids in ``[first_id, last_id]`` (either end open
        when None), in order of storage, in context or not."""
        ...

    async def messages_by_id(self, message_ids: Sequence[int]) -> list[ArchivedMessage]:
        """The stored messages among ``message_ids`` (unknown ids left out), in id order."""
        ...

    async def sessions_sharing_key(self, session_id: int, limit: int) -> list[int]:
        """Ids of the sessions of the same conversation key (the same chat), this one included,
        at most ``limit`` of the most recent; [] when the session does not exist."""
        ...

    async def search_messages(
        self, query: str, session_ids: Sequence[int], limit: int, skip: SkipHit | None = None
    ) -> list[MessageHit]:
        """Said messages (no system prompts, no rewritten copies) of ``session_ids`` that
        contain the words of ``query``, best match first, ties by id.

        Of the best ``limit`` matches, those ``skip`` says yes to are left out. Every word is
        required; on SQLite, when that leaves nothing, any word will do.
        """
        ...

    async def read_records(self, job: RecordJob[T]) -> T:
        """Run ``job`` on a read-only connection and return its result (the engine's tables)."""
        ...

    async def write_records(self, job: RecordJob[T]) -> T:
        """Run ``job`` in the host's next group commit and return its result once durable.

        The job must keep every effect in the database (a failed batch is replayed job by job).
        """
        ...
