"""The model's tools over the lossless store: ``lcm_grep``, ``lcm_describe``, ``lcm_expand``.

Every tool answers with plain text. Scope is the current session, or with ``all_sessions`` every
session of the same user (the same session key); nodes of other users are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.engines.toolkit.tool_output_pruning import tool_names_by_call_id
from agent.tokens import count_text_tokens
from agent.types import Message, content_text

from .assembly import node_tag
from .config import LcmSettings
from .dag import Node, SourceMessage
from .search import Hit, search_messages, search_nodes
from .store import LcmStore

MAX_SESSIONS_SEARCHED = 1_000
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "lcm_grep",
        "description": (
            "Search the full history of this conversation (every original message, and the "
            "summaries of older parts) by words. Returns snippets with message ids, times and "
            "the lcm node that covers each message."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "scope": {"type": "string", "enum": ["messages", "summaries", "both"]},
                "all_sessions": {
                    "type": "boolean",
                    "description": "Search every conversation of this user, not only this one.",
                },
            },
            "required": ["query"],
        },
    },
    {
        "name": "lcm_describe",
        "description": (
            "Metadata of an lcm summary node: level, which messages or nodes it covers, time "
            "range and token counts (not its content)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"node_id": {"type": "integer"}},
            "required": ["node_id"],
        },
    },
    {
        "name": "lcm_expand",
        "description": (
            "Open an lcm summary node: the original messages behind a leaf node, or the child "
            "summaries behind a higher node, a page at a time."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "node_id": {"type": "integer"},
                "page": {"type": "integer", "minimum": 1, "description": "Page number, from 1."},
            },
            "required": ["node_id"],
        },
    },
]


class ToolArgumentError(ValueError):
    """A tool was called with arguments it cannot use; the message goes back to the model."""


class LcmTools:
    """Runs the three tools for one session of one store."""

    def __init__(self, store: LcmStore, settings: LcmSettings) -> None:
        self.store = store
        self.settings = settings

    async def call(self, session_id: int, name: str, args: dict[str, Any]) -> str:
        """Run tool ``name``; bad arguments come back as a short explanation."""
        handlers = {"lcm_grep": self.grep, "lcm_describe": self.describe, "lcm_expand": self.expand}
        if name not in handlers:
            raise KeyError(f"the lcm engine has no tool {name!r}")
        try:
            return await handlers[name](session_id, args)
        except ToolArgumentError as exc:
            return f"{name}: {exc}"

    async def _user_sessions(self, session_id: int) -> list[int]:
        archive = self.store.archive
        sessions = await archive.sessions_sharing_key(session_id, MAX_SESSIONS_SEARCHED)
        return sorted({*sessions, session_id})

    async def grep(self, session_id: int, args: dict[str, Any]) -> str:
        """Snippets of matching messages and/or summaries, with ids, times and covering nodes."""
        query = str(args.get("query") or "").strip()
        scope = str(args.get("scope") or "both")
        if not query:
            raise ToolArgumentError("give a query")
        if scope not in ("messages", "summaries", "both"):
            raise ToolArgumentError("scope is one of messages, summaries, both")
        sessions = (
            await self._user_sessions(session_id) if args.get("all_sessions") else [session_id]
        )
        limit = self.settings.grep_limit
        nodes = await self.store.nodes(sessions)
        lines: list[str] = []
        if scope in ("messages", "both"):
            hits = await search_messages(self.store.archive, query, sessions, limit)
            lines += [_message_line(hit, _covering_leaf(nodes, hit)) for hit in hits]
        if scope in ("summaries", "both"):
            hits = await search_nodes(self.store.archive, query, sessions, limit)
            by_id = {n.id: n for n in nodes}
            lines += [f"{node_tag(by_id[h.id])} {h.snippet}" for h in hits if h.id in by_id]
        if not lines:
            return f"lcm_grep: nothing matches {query!r}."
        return f"lcm_grep {query!r}: {len(lines)} result(s)\n" + "\n".join(lines)

    async def _visible_node(self, session_id: int, args: dict[str, Any]) -> Node:
        raw = args.get("node_id")
        try:
            node_id = int(str(raw))
        except ValueError:
            raise ToolArgumentError(f"node_id must be a number, not {raw!r}") from None
        node = await self.store.node(node_id)
        if node is None or node.session_id not in await self._user_sessions(session_id):
            raise ToolArgumentError(f"there is no lcm node {node_id}")
        return node

    async def describe(self, session_id: int, args: dict[str, Any]) -> str:
        """A node's metadata and coverage, without its content."""
        node = await self._visible_node(session_id, args)
        kind = "leaf (summary of messages)" if node.is_leaf else "condensed (summary of nodes)"
        lines = [
            f"lcm node {node.id}: {kind}, level {node.level}, session {node.session_id}",
            f"covers messages {node.first_message_id}-{node.last_message_id} "
            f"({node.message_count} messages)",
            f"time: {node.first_at.strftime(TIME_FORMAT)} to {node.last_at.strftime(TIME_FORMAT)}",
            f"tokens: {node.token_count} summarising {node.source_tokens}",
            f"summary written by: {node.mode}",
            "parent: "
            + (str(node.parent_id) if node.parent_id is not None else "none (shown in context)"),
        ]
        if node.child_ids:
            lines.append("children: " + ", ".join(str(c) for c in node.child_ids))
        return "\n".join(lines)

    async def expand(self, session_id: int, args: dict[str, Any]) -> str:
        """The originals (leaf) or children (condensed) behind a node, one page at a time."""
        node = await self._visible_node(session_id, args)
        page = _page_number(args.get("page", 1))
        if node.is_leaf:
            sources = [
                s
                for s in await self.store.sources(node.session_id)
                if node.first_message_id <= s.id <= node.last_message_id
            ]
            items = _render_messages(sources)
        else:
            children = {n.id: n for n in await self.store.nodes([node.session_id])}
            items = [
                f"{node_tag(children[c])}\n{children[c].content}"
                for c in node.child_ids
                if c in children
            ]
        pages = paginate(items, self.settings.expand_page_tokens)
        if page > len(pages):
            raise ToolArgumentError(
                f"node {node.id} has {len(pages)} page(s); page {page} is past it"
            )
        what = "original messages" if node.is_leaf else "child summaries"
        header = f"{node_tag(node)} {what}, page {page} of {len(pages)}"
        footer = (
            f"\n[more: lcm_expand node_id={node.id} page={page + 1}]" if page < len(pages) else ""
        )
        return f"{header}\n\n{pages[page - 1]}{footer}"


def _page_number(raw: Any) -> int:
    try:
        page = int(str(raw))
    except ValueError:
        raise ToolArgumentError(f"page must be a number, not {raw!r}") from None
    if page < 1:
        raise ToolArgumentError("pages are numbered from 1")
    return page


def _covering_leaf(nodes: Sequence[Node], hit: Hit) -> Node | None:
    for node in nodes:
        if (
            node.is_leaf
            and node.session_id == hit.session_id
            and node.first_message_id <= hit.id <= node.last_message_id
        ):
            return node
    return None


def _message_line(hit: Hit, leaf: Node | None) -> str:
    where = f"in lcm node {leaf.id}" if leaf else "not summarised yet"
    when = hit.created_at.strftime(TIME_FORMAT)
    label = f"message {hit.id} | session {hit.session_id} | {hit.role} | {when} | {where}"
    return f"[{label}] {hit.snippet}"


def _render_messages(sources: Sequence[SourceMessage]) -> list[str]:
    names = tool_names_by_call_id([s.message for s in sources])
    return [
        f"[message {s.id} | {s.role} | {s.created_at.strftime(TIME_FORMAT)}]\n"
        + original_text(s.message, names)
        for s in sources
    ]


def original_text(message: Message, tool_names: dict[str, str]) -> str:
    """A message's full text, verbatim: content, then each tool call with its arguments."""
    lines = [content_text(message.get("content"))]
    if message.get("role") == "tool":
        call_id = str(message.get("tool_call_id"))
        lines.insert(0, f"(result of {tool_names.get(call_id, 'a tool')} call {call_id})")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        lines.append(f"(called {function.get('name')} with {function.get('arguments')})")
    return "\n".join(line for line in lines if line)


def paginate(items: Sequence[str], page_tokens: int) -> list[str]:
    """Items packed in order into pages of at most ``page_tokens`` (an oversized item is cut
    into parts of its own), joined by blank lines; at least one page."""
    pages: list[str] = []
    current: list[str] = []
    used = 0
    for item in items:
        for part in _parts(item, page_tokens):
            tokens = count_text_tokens(part)
            if current and used + tokens > page_tokens:
                pages.append("\n\n".join(current))
                current, used = [], 0
            current.append(part)
            used += tokens
    if current:
        pages.append("\n\n".join(current))
    return pages or ["(nothing)"]


def _parts(item: str, page_tokens: int) -> list[str]:
    if count_text_tokens(item) <= page_tokens:
        return [item]
    parts, rest = [], item
    while rest:
        low, high = 1, len(rest)
        while low < high:  # the longest prefix of ``rest`` that fits a page
            middle = (low + high + 1) // 2
            if count_text_tokens(rest[:middle]) <= page_tokens:
                low = middle
            else:
                high = middle - 1
        parts.append(rest[:low])
        rest = rest[low:]
    return parts
