"""Full-text search over original messages and summary nodes.

SQLite: the FTS5 tables ``lcm_messages_fts`` and ``lcm_nodes_fts`` (kept in step by triggers).
PostgreSQL: ``to_tsvector('simple', ...) @@ plainto_tsquery('simple', ...)`` on the same
expressions the GIN indexes of revision 0002 are built on. Results are ranked by relevance,
ties by id, so the same store always gives the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine

from .dag import is_lcm_rendered
from .store import as_utc

SNIPPET_CHARS = 200
_WORD = re.compile(r"\w+", re.UNICODE)

_SQLITE_MESSAGES = """
SELECT m.id, m.session_id, m.role, m.created_at, f.body AS body
FROM lcm_messages_fts AS f JOIN messages AS m ON m.id = f.rowid
WHERE lcm_messages_fts MATCH :query AND m.session_id IN :session_ids
  AND m.role != 'system' AND m.kind != 'derived'
ORDER BY bm25(lcm_messages_fts), m.id LIMIT :limit"""

_POSTGRES_MESSAGES = """
SELECT m.id, m.session_id, m.role, m.created_at, m.content::text AS body
FROM messages AS m
WHERE to_tsvector('simple', coalesce(m.content::text, '')) @@ plainto_tsquery('simple', :query)
  AND m.session_id IN :session_ids AND m.role != 'system' AND m.kind != 'derived'
ORDER BY ts_rank(to_tsvector('simple', coalesce(m.content::text, '')),
                 plainto_tsquery('simple', :query)) DESC, m.id
LIMIT :limit"""

_SQLITE_NODES = """
SELECT n.id, n.session_id, n.first_at AS created_at, n.content AS body
FROM lcm_nodes_fts AS f JOIN lcm_nodes AS n ON n.id = f.rowid
WHERE lcm_nodes_fts MATCH :query AND n.session_id IN :session_ids
ORDER BY bm25(lcm_nodes_fts), n.id LIMIT :limit"""

_POSTGRES_NODES = """
SELECT n.id, n.session_id, n.first_at AS created_at, n.content AS body
FROM lcm_nodes AS n
WHERE to_tsvector('simple', n.content) @@ plainto_tsquery('simple', :query)
  AND n.session_id IN :session_ids
ORDER BY ts_rank(to_tsvector('simple', n.content), plainto_tsquery('simple', :query)) DESC, n.id
LIMIT :limit"""


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a message (with its role) or a summary node, and a snippet."""

    kind: str
    id: int
    session_id: int
    created_at: datetime
    snippet: str
    role: str = ""


def query_words(query: str) -> list[str]:
    """The words of a search query (punctuation and operators dropped)."""
    return _WORD.findall(query)


def fts5_match(words: Sequence[str], *, any_word: bool) -> str:
    """An FTS5 MATCH expression: every word quoted, all required unless ``any_word``."""
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    return (" OR " if any_word else " ").join(quoted)


def snippet(body: str, words: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``body`` around the first query word found."""
    flat = " ".join(body.split())
    lowered = flat.lower()
    found = [lowered.find(w.lower()) for w in words if lowered.find(w.lower()) >= 0]
    start = max(0, min(found) - width // 3) if found else 0
    piece = flat[start : start + width]
    return ("..." if start else "") + piece + ("..." if start + width < len(flat) else "")


async def search(
    engine: AsyncEngine, kind: str, query: str, session_ids: Sequence[int], limit: int
) -> list[Hit]:
    """Messages (``kind="message"``) or nodes (``"node"``) matching ``query``, best first.

    On SQLite every word is required first; when that finds nothing, any word will do.
    """
    words = query_words(query)
    if not words or not session_ids:
        return []
    sqlite = engine.dialect.name == "sqlite"
    sql = {
        ("message", True): _SQLITE_MESSAGES,
        ("message", False): _POSTGRES_MESSAGES,
        ("node", True): _SQLITE_NODES,
        ("node", False): _POSTGRES_NODES,
    }[(kind, sqlite)]
    statement = text(sql).bindparams(bindparam("session_ids", expanding=True))
    matches = [fts5_match(words, any_word=False), fts5_match(words, any_word=True)]
    attempts = matches if sqlite else [" ".join(words)]
    for match in attempts:
        async with engine.connect() as connection:
            result = await connection.execute(
                statement,
                {"query": match, "session_ids": list(session_ids), "limit": limit * 2},
            )
            rows = result.mappings().all()
        hits = [
            Hit(
                kind,
                row["id"],
                row["session_id"],
                as_utc(_as_datetime(row["created_at"])),
                snippet(str(row["body"] or ""), words),
                str(row.get("role") or ""),
            )
            for row in rows
            if not is_lcm_rendered(str(row["body"] or "").lstrip('"'))
        ]
        if hits:
            return hits[:limit]
    return []


def _as_datetime(value: datetime | str) -> datetime:
    # Raw SQL on SQLite hands timestamps back as text.
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
