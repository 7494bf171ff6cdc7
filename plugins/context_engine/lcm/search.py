"""Full-text search over original messages and summary nodes.

Messages are searched by the host
(:meth:`agent.engines.message_archive.MessageArchive.search_messages`); nodes here, in the engine's
own tables. SQLite: the FTS5 table ``lcm_nodes_fts`` (kept in step by triggers). PostgreSQL:
``to_tsvector('simple', ...) @@ plainto_tsquery('simple', ...)`` on the expression the GIN index of
the plugin's migration is built on. Results are ranked by relevance, ties by id, so the same store
always gives the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from agent.engines.message_archive import MessageArchive, MessageHit
from agent.engines.text_search import prepare_search, query_words

from .dag import is_lcm_rendered
from .store import as_utc

SNIPPET_CHARS = 200

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


def snippet(body: str, words: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``body`` around the first query word found."""
    flat = " ".join(body.split())
    lowered = flat.lower()
    found = [lowered.find(w.lower()) for w in words if lowered.find(w.lower()) >= 0]
    start = max(0, min(found) - width // 3) if found else 0
    piece = flat[start : start + width]
    return ("..." if start else "") + piece + ("..." if start + width < len(flat) else "")


async def search_messages(
    archive: MessageArchive, query: str, session_ids: Sequence[int], limit: int
) -> list[Hit]:
    """Original messages matching ``query``, best first (the engine's own summaries left out)."""
    words = query_words(query)
    found = await archive.search_messages(query, session_ids, limit * 2, skip=_rendered)
    return [
        Hit("message", h.id, h.session_id, h.created_at, snippet(h.text, words), h.role)
        for h in found[:limit]
    ]


def _rendered(hit: MessageHit) -> bool:
    return is_lcm_rendered(hit.text)


async def search_nodes(
    archive: MessageArchive, query: str, session_ids: Sequence[int], limit: int
) -> list[Hit]:
    """Summary nodes matching ``query``, best first (see :mod:`agent.engines.text_search`)."""
    search = prepare_search(
        query, archive.dialect_name, sqlite_sql=_SQLITE_NODES, postgres_sql=_POSTGRES_NODES
    )
    if search is None or not session_ids:
        return []
    for match in search.attempts:
        params = {"query": match, "session_ids": list(session_ids), "limit": limit * 2}

        def run(connection: Connection, params: dict[str, object] = params) -> list[Hit]:
            rows = connection.execute(search.statement, params).mappings().all()
            return [_node_hit(row, search.words) for row in rows if not _rendered_body(row)]

        hits = await archive.read_records(run)
        if hits:
            return hits[:limit]
    return []


def _rendered_body(row: Any) -> bool:
    return is_lcm_rendered(str(row["body"] or ""))


def _node_hit(row: Any, words: Sequence[str]) -> Hit:
    created = as_utc(_as_datetime(row["created_at"]))
    return Hit(
        "node", row["id"], row["session_id"], created, snippet(str(row["body"] or ""), words)
    )


def _as_datetime(value: datetime | str) -> datetime:
    # Raw SQL on SQLite hands timestamps back as text.
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
