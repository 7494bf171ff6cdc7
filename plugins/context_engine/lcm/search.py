"""Full-text search over original messages and summary nodes.

Messages are searched by the host
(:meth:`agent.engines.message_archive.MessageArchive.search_messages`), nodes by the host over
the engine's own table (:meth:`~agent.engines.message_archive.MessageArchive.search_records`,
on the indexes the plugin's migration made: the FTS5 table ``lcm_nodes_fts`` on SQLite, the GIN
index on ``to_tsvector('simple', content)`` on PostgreSQL). Results are ranked by relevance,
ties by id, so the same store always gives the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agent.engines.message_archive import MessageArchive, MessageHit, Record, RecordSearch
from agent.engines.text_search import query_words

from .dag import is_lcm_rendered
from .store import NODES, as_utc

SNIPPET_CHARS = 200

NODE_COLUMNS = ("id", "session_id", "first_at", "content")
"""What a node hit needs: where it sits, when its span began, and its summary."""


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
    """Summary nodes matching ``query``, best first (see
    :class:`~agent.engines.message_archive.RecordSearch`)."""
    if not session_ids:
        return []
    search = RecordSearch(
        NODES,
        "content",
        query,
        {"session_id": list(session_ids)},
        columns=NODE_COLUMNS,
        limit=limit * 2,
    )
    words = query_words(query)
    rows = await archive.search_records(search, skip=_rendered_body)
    return [_node_hit(row, words) for row in rows][:limit]


def _rendered_body(row: Record) -> bool:
    return is_lcm_rendered(str(row["content"] or ""))


def _node_hit(row: Record, words: Sequence[str]) -> Hit:
    created = row["first_at"]
    if not isinstance(created, datetime):
        raise TypeError(f"expected a node's first_at, got {created!r}")
    return Hit(
        "node",
        int(str(row["id"])),
        int(str(row["session_id"])),
        as_utc(created),
        snippet(str(row["content"] or ""), words),
    )
