"""The ``recall`` tool: the model searches the owner's earlier sessions for what was said.

What the search may see is the store's decision (:class:`agent.recall.RecallStore`); this tool
turns the hits into dated snippets with the session each comes from.
"""

from __future__ import annotations

from typing import Any

from agent.memory import MemoryOwner
from agent.recall import RecallHit, RecallStore, snippet
from agent.tools.registry import Tool, ToolError

RECALL_TOOL_NAME = "recall"
RECALL_LIMIT = 8
"""How many snippets one recall returns: a handful of the best, not a transcript."""

_SCOPES = {
    "user": "your earlier conversations with this person (and groups they are in)",
    "chat": "this group chat's earlier conversations",
}


def recall_tool(
    store: RecallStore,
    owner: MemoryOwner,
    current_session: int | None = None,
    limit: int = RECALL_LIMIT,
) -> Tool:
    """The tool searching what ``owner`` may see, at most ``limit`` snippets a call; what is in
    the context of ``current_session`` is not repeated."""

    async def handle(args: dict[str, Any]) -> str:
        query = " ".join(str(args.get("query") or "").split())
        if not query:
            raise ToolError("missing 'query' (the words to look for)")
        hits = await store.recall_messages(owner, query, limit, current_session=current_session)
        if not hits:
            return f"Nothing found for {query!r} in earlier conversations."
        return "\n".join(_line(hit, query) for hit in hits)

    return Tool(
        RECALL_TOOL_NAME,
        f"Search {_SCOPES[owner.scope]} by words (full-text), beyond what is in context now: "
        "earlier sessions (before /new) and parts already summarised. Returns dated snippets "
        "with the session they come from.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words the messages contain."}
            },
            "required": ["query"],
        },
        handle,
    )


def _line(hit: RecallHit, query: str) -> str:
    said = hit.created_at.strftime("%Y-%m-%d %H:%M UTC")
    started = hit.session_started_at.strftime("%Y-%m-%d")
    return (
        f"[{said}] {hit.role} (session {hit.session_id}, started {started}): "
        f"{snippet(hit.text, query)}"
    )
