"""Full-text queries as the store's message search and engines' own indexes read them.

A query is its words (punctuation and operators dropped). On SQLite (FTS5) every word is
required first and, when that finds nothing, any word will do; on PostgreSQL the words go to
``plainto_tsquery`` (every word required). Shared by the store's message search
(:meth:`agent.engines.message_archive.MessageArchive.search_messages`) and engines that index
records of their own, so a query means the same thing in both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import TextClause, bindparam, text

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class PreparedSearch:
    """A search ready to run: the statement, the query's words, the ``:query`` values to try."""

    statement: TextClause
    words: list[str]
    attempts: list[str]


def query_words(query: str) -> list[str]:
    """The words of a search query (punctuation and operators dropped)."""
    return _WORD.findall(query)


def fts5_match(words: Sequence[str], *, any_word: bool) -> str:
    """An FTS5 MATCH expression: every word quoted, all required unless ``any_word``."""
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    return (" OR " if any_word else " ").join(quoted)


def prepare_search(
    query: str, dialect: str, *, sqlite_sql: str, postgres_sql: str
) -> PreparedSearch | None:
    """The dialect's statement (``:query``, ``:session_ids`` expanding, ``:limit``) and the
    values of ``:query`` to try in turn; None when the query has no words."""
    words = query_words(query)
    if not words:
        return None
    sqlite = dialect == "sqlite"
    statement = text(sqlite_sql if sqlite else postgres_sql)
    attempts = (
        [fts5_match(words, any_word=False), fts5_match(words, any_word=True)]
        if sqlite
        else [" ".join(words)]
    )
    return PreparedSearch(
        statement.bindparams(bindparam("session_ids", expanding=True)), words, attempts
    )
