"""What a context engine may read and write of the host's store: the :class:`MessageArchive`.

Every message of every session stays stored; an engine that needs more than the context it is
handed (a lossless engine reopening old turns, a search tool) reads it here, never from the
host's tables. An engine may also keep records of its own in tables it creates through a
migration chain of its own (see ``docs/architecture.md``). It describes what it wants of them
in plain values (a :class:`RecordQuery`, :class:`RecordSearch`, or the changes
:class:`InsertRows`, :class:`UpdateRows`, :class:`DeleteRows`), by table and column name; the
host turns them into SQL, and :meth:`MessageArchive.write_records` queues the changes in the
host's group commit like every other write. No SQL and no database library crosses this line.

The host implements the protocol (``gateway.store.archive.StoreArchive``); plugins import only
this module and :mod:`agent.engines.context_engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, TypeAlias

from agent.types import Message

MessageKind = Literal["message", "summary", "derived", "notice"]
"""How a stored message came to be: said (``message``), a compaction's ``summary``, a
rewritten copy made by a compaction (``derived``), or a ``notice`` from the host."""

RecordValue: TypeAlias = int | float | str | bool | datetime | None
"""A value in a column of an engine's own table. Datetimes come back timezone-aware UTC (and
may be given in any zone: the host stores them as UTC)."""

Record: TypeAlias = dict[str, RecordValue]
"""One row of an engine's own table, by column name."""


@dataclass(frozen=True, slots=True)
class InsertedId:
    """In :meth:`MessageArchive.write_records`: the id of a row inserted by an earlier change of
    the same call (``change``: its position among the changes; ``row``: the row's position in
    it), for rows that refer to a row made in the same transaction."""

    change: int
    row: int = 0


@dataclass(frozen=True, slots=True)
class Between:
    """A condition: the column's value lies in ``[first, last]`` (either end open when None)."""

    first: RecordValue = None
    last: RecordValue = None


@dataclass(frozen=True, slots=True)
class RowsOf:
    """A condition: the column's value is among the ``column`` values of the rows of ``table``
    that match ``where`` (a sub-query, so the match is read in the same transaction)."""

    table: str
    column: str
    where: Where


WriteValue: TypeAlias = RecordValue | InsertedId
"""A value to write: a plain value, or the id of a row inserted earlier in the same call."""

Condition: TypeAlias = RecordValue | Sequence[RecordValue] | Between | RowsOf | InsertedId
"""What a column must hold: a value (equal; None: is null), a list or tuple of values (one of
them), a range (:class:`Between`), the values of a sub-query (:class:`RowsOf`), or the id of a
row inserted earlier in the same write (:class:`InsertedId`)."""

Where: TypeAlias = Mapping[str, Condition]
"""Conditions by column name, all of which a row must meet (empty: every row)."""


@dataclass(frozen=True, slots=True)
class RecordQuery:
    """Rows of an engine's own ``table``: those matching ``where``, in the order of the
    ``order_by`` columns (ascending), at most ``limit``; ``columns`` (empty: all) of each."""

    table: str
    where: Where = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    order_by: tuple[str, ...] = ()
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class RecordSearch:
    """A full-text search over ``text_column`` of an engine's own ``table``, among the rows
    matching ``where``, best match first, ties by id, at most ``limit``.

    Every word of ``query`` is required; on SQLite, when that finds nothing, any word will do
    (as :meth:`MessageArchive.search_messages`). The table needs an integer ``id`` primary key
    and a full-text index its migration creates: on SQLite an FTS5 table named
    ``<table>_fts`` over ``text_column`` (rowid = ``id``, kept in step by triggers); on
    PostgreSQL a GIN index on ``to_tsvector('simple', <text_column>)``.
    """

    table: str
    text_column: str
    query: str
    where: Where = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    limit: int = 10


@dataclass(frozen=True, slots=True)
class InsertRows:
    """A change: insert ``rows`` into ``table``. With ``id_column``, the ids the database gives
    the new rows are returned (and :class:`InsertedId` may refer to them)."""

    table: str
    rows: Sequence[Mapping[str, WriteValue]]
    id_column: str | None = None


@dataclass(frozen=True, slots=True)
class UpdateRows:
    """A change: set ``values`` on the rows of ``table`` matching ``where``."""

    table: str
    where: Where
    values: Mapping[str, WriteValue]


@dataclass(frozen=True, slots=True)
class DeleteRows:
    """A change: delete the rows of ``table`` matching ``where``."""

    table: str
    where: Where


RecordChange: TypeAlias = InsertRows | UpdateRows | DeleteRows
"""One change to an engine's own tables."""

SkipRecord = Callable[[Record], bool]
"""Says which rows of a record search the caller does not want."""


class RecordTableError(LookupError):
    """A record request names a table an engine may not use: one that does not exist, or one of
    the host's own (engines read stored messages through the archive's message methods)."""


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

    async def read_records(self, query: RecordQuery) -> list[Record]:
        """The rows of the engine's own table that ``query`` asks for.

        Raises :class:`RecordTableError` for a table that is not the engine's.
        """
        ...

    async def search_records(
        self, search: RecordSearch, skip: SkipRecord | None = None
    ) -> list[Record]:
        """Rows of the engine's own table matching ``search`` (see :class:`RecordSearch`);
        of the best ``search.limit`` matches, those ``skip`` says yes to are left out."""
        ...

    async def write_records(self, *changes: RecordChange) -> list[list[int]]:
        """Apply ``changes`` in order, in one transaction of the host's next group commit, and
        return once durable: for each change, the ids of the rows it inserted (by its
        :attr:`InsertRows.id_column`; [] for other changes).

        Raises :class:`RecordTableError` for a table that is not the engine's.
        """
        ...
