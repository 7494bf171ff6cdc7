"""Full-text queries as the store runs them: SQLite FTS5 and PostgreSQL ``tsvector``.

A query is its words (:func:`agent.engines.text_search.query_words`). On SQLite (FTS5) every
word is required first and, when that finds nothing, any word will do; on PostgreSQL the words
go to ``plainto_tsquery('simple', ...)`` (every word required). The store's message search
(:meth:`gateway.store.archive.StoreArchive.search_messages`) and the search over an engine's own
table (:func:`gateway.store.engine_records.search_statement`) share this, so a query means the
same thing in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, TextClause, bindparam, func, literal_column, text

from agent.engines.text_search import query_words

SEARCH_CONFIG: ColumnElement[str] = literal_column("'simple'")
"""PostgreSQL's text-search configuration, written inline: an index on
``to_tsvector('simple', ...)`` serves only a query that repeats the expression exactly."""


@dataclass(frozen=True, slots=True)
class PreparedSearch:
    """A search ready to run: the statement, the query's words, the ``:query`` values to try."""

    statement: TextClause
    words: list[str]
    attempts: list[str]


def fts5_match(words: Sequence[str], *, any_word: bool) -> str:
    """An FTS5 MATCH expression: every word quoted, all required unless ``any_word``."""
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    return (" OR " if any_word else " ").join(quoted)


def search_attempts(query: str, dialect: str) -> list[str]:
    """The values of ``:query`` to try in turn ([] when the query has no words)."""
    words = query_words(query)
    if not words:
        return []
    if dialect == "sqlite":
        return [fts5_match(words, any_word=False), fts5_match(words, any_word=True)]
    return [" ".join(words)]


def prepare_search(
    query: str, dialect: str, *, sqlite_sql: str, postgres_sql: str
) -> PreparedSearch | None:
    """The dialect's statement (``:query``, ``:session_ids`` expanding, ``:limit``) and the
    values of ``:query`` to try in turn; None when the query has no words."""
    attempts = search_attempts(query, dialect)
    if not attempts:
        return None
    statement = text(sqlite_sql if dialect == "sqlite" else postgres_sql)
    return PreparedSearch(
        statement.bindparams(bindparam("session_ids", expanding=True)),
        query_words(query),
        attempts,
    )


def tsvector(column: ColumnElement[str]) -> ColumnElement[object]:
    """``to_tsvector('simple', column)``: the expression PostgreSQL's GIN indexes are built on."""
    return func.to_tsvector(SEARCH_CONFIG, column)


def tsquery(query: ColumnElement[str]) -> ColumnElement[object]:
    """``plainto_tsquery('simple', query)``: every word required."""
    return func.plainto_tsquery(SEARCH_CONFIG, query)
