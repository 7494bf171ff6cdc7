"""An engine's own tables: the archive's record requests (:mod:`agent.engines.message_archive`)
run as SQL.

An engine describes what it wants by table and column name (a ``RecordQuery``, a
``RecordSearch``, ``InsertRows`` / ``UpdateRows`` / ``DeleteRows``); here those become SQLAlchemy
Core statements on the tables as the database has them (reflected once per store, since the
engine's migrations made them and the host's models know nothing of them). The host's own
tables are refused: engines read stored messages through the archive's message methods.
Datetimes are stored as UTC (naive on SQLite, as the rest of the store) and come back
timezone-aware UTC.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    MetaData,
    RowMapping,
    Select,
    String,
    Table,
    and_,
    bindparam,
    column,
    delete,
    func,
    insert,
    select,
    table,
    text,
    true,
    update,
)
from sqlalchemy.exc import NoSuchTableError

from agent.engines.message_archive import (
    Between,
    Condition,
    InsertedId,
    InsertRows,
    Record,
    RecordChange,
    RecordQuery,
    RecordSearch,
    RecordTableError,
    RecordValue,
    RowsOf,
    UpdateRows,
    Where,
    WriteValue,
)
from gateway.store.tables import metadata as core_metadata
from gateway.store.text_search import tsquery, tsvector

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HOST_TABLE_PREFIXES = ("alembic_version", "sqlite_")
"""Tables that are the host's (or the database's) though not in the core models."""


class RecordTables:
    """The engine tables of one database, each reflected the first time it is named."""

    def __init__(self) -> None:
        self._metadata = MetaData()
        self._tables: dict[str, Table] = {}

    def get(self, connection: Connection, name: str) -> Table:
        """The engine table ``name``; :class:`RecordTableError` when it is not one."""
        known = self._tables.get(name)
        if known is not None:
            return known
        if (
            not _IDENTIFIER.fullmatch(name)
            or name in core_metadata.tables
            or name.startswith(HOST_TABLE_PREFIXES)
        ):
            raise RecordTableError(f"{name!r} is not an engine's own table")
        try:
            reflected = Table(name, self._metadata, autoload_with=connection, resolve_fks=False)
        except NoSuchTableError as error:
            raise RecordTableError(f"there is no table {name!r}") from error
        self._tables[name] = reflected
        return reflected


class _Statements:
    """Builds statements for one request on one connection (``inserted``: ids of a write's
    earlier inserts, for :class:`InsertedId`)."""

    def __init__(self, connection: Connection, tables: RecordTables) -> None:
        self.connection = connection
        self.tables = tables
        self.sqlite = connection.dialect.name == "sqlite"
        self.inserted: list[list[int]] = []

    def table(self, name: str) -> Table:
        return self.tables.get(self.connection, name)

    def column(self, owner: Table, name: str) -> Column[Any]:
        if name not in owner.c:
            raise RecordTableError(f"table {owner.name!r} has no column {name!r}")
        return owner.c[name]

    def columns(self, owner: Table, names: Sequence[str]) -> list[Column[Any]]:
        return [self.column(owner, name) for name in names] if names else list(owner.c)

    def value(self, value: WriteValue) -> Any:
        """A value as the database keeps it."""
        if isinstance(value, InsertedId):
            try:
                return self.inserted[value.change][value.row]
            except IndexError:
                raise ValueError(f"{value} refers to no row inserted before it") from None
        if isinstance(value, datetime) and value.tzinfo is not None:
            utc = value.astimezone(UTC)
            return utc.replace(tzinfo=None) if self.sqlite else utc
        return value

    def values(self, owner: Table, values: Mapping[str, WriteValue]) -> dict[str, Any]:
        return {self.column(owner, name).name: self.value(v) for name, v in values.items()}

    def where(self, owner: Table, where: Where) -> ColumnElement[bool]:
        """Every condition of ``where`` on ``owner``'s columns."""
        return and_(true(), *(self.condition(owner, name, m) for name, m in where.items()))

    def condition(self, owner: Table, name: str, match: Condition) -> ColumnElement[bool]:
        col = self.column(owner, name)
        if isinstance(match, Between):
            ends = [
                *([col >= self.value(match.first)] if match.first is not None else []),
                *([col <= self.value(match.last)] if match.last is not None else []),
            ]
            return and_(true(), *ends)
        if isinstance(match, RowsOf):
            source = self.table(match.table)
            subquery = select(self.column(source, match.column)).where(
                self.where(source, match.where)
            )
            return col.in_(subquery)
        if isinstance(match, Sequence) and not isinstance(match, str):
            return col.in_([self.value(v) for v in match])
        if match is None:
            return col.is_(None)
        return col == self.value(match)


def read_records(connection: Connection, tables: RecordTables, query: RecordQuery) -> list[Record]:
    """The rows ``query`` asks for (a read job)."""
    build = _Statements(connection, tables)
    owner = build.table(query.table)
    statement = (
        select(*build.columns(owner, query.columns))
        .where(build.where(owner, query.where))
        .order_by(*(build.column(owner, name) for name in query.order_by))
    )
    if query.limit is not None:
        statement = statement.limit(query.limit)
    return _records(connection.execute(statement).mappings())


def search_records(
    connection: Connection, tables: RecordTables, search: RecordSearch, match: str
) -> list[Record]:
    """The rows of ``search`` matching ``match`` (one of the store's attempts, see
    :func:`gateway.store.text_search.search_attempts`), best first (a read job)."""
    build = _Statements(connection, tables)
    owner = build.table(search.table)
    statement = _search_statement(build, owner, search)
    return _records(connection.execute(statement, {"query": match}).mappings())


def write_records(
    connection: Connection, tables: RecordTables, changes: Sequence[RecordChange]
) -> list[list[int]]:
    """Apply ``changes`` in order (a write job); the ids each change inserted."""
    build = _Statements(connection, tables)
    for change in changes:
        build.inserted.append(_apply(build, change))
    return build.inserted


def _apply(build: _Statements, change: RecordChange) -> list[int]:
    owner = build.table(change.table)
    if isinstance(change, InsertRows):
        rows = [build.values(owner, row) for row in change.rows]
        if change.id_column is None:
            if rows:
                build.connection.execute(insert(owner), rows)
            return []
        returning = insert(owner).returning(build.column(owner, change.id_column))
        return [int(build.connection.execute(returning, row).scalar_one()) for row in rows]
    if isinstance(change, UpdateRows):
        statement = update(owner).where(build.where(owner, change.where))
        build.connection.execute(statement.values(build.values(owner, change.values)))
        return []
    build.connection.execute(delete(owner).where(build.where(owner, change.where)))
    return []


def _search_statement(build: _Statements, owner: Table, search: RecordSearch) -> Select[Any]:
    """SQLite: the FTS5 table ``<table>_fts`` (rowid = id), ranked by bm25. PostgreSQL:
    ``to_tsvector('simple', column) @@ plainto_tsquery('simple', :query)``, ranked by
    ``ts_rank``. Ties by id either way, so the same store always gives the same answer."""
    ident = build.column(owner, "id")
    statement = select(*build.columns(owner, search.columns))
    if build.sqlite:
        index = f"{owner.name}_fts"
        fts = table(index, column("rowid"))
        statement = (
            statement.select_from(owner.join(fts, fts.c.rowid == ident))
            .where(text(f"{index} MATCH :query"))
            .order_by(text(f"bm25({index})"), ident)
        )
    else:
        vector = tsvector(build.column(owner, search.text_column))
        wanted = tsquery(bindparam("query", type_=String()))
        statement = statement.where(vector.op("@@")(wanted)).order_by(
            func.ts_rank(vector, wanted).desc(), ident
        )
    return statement.where(build.where(owner, search.where)).limit(search.limit)


def _records(rows: Iterable[RowMapping]) -> list[Record]:
    return [{name: _read(value) for name, value in row.items()} for row in rows]


def _read(value: Any) -> RecordValue:
    """A stored value as engines get it: datetimes timezone-aware UTC (SQLite keeps naive UTC)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value
