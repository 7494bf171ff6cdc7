"""Context assembly: the system prompt, the summary nodes, then a fresh tail kept verbatim.

Pure functions of the stored nodes and the current context, so the same store always gives the
same context (which also keeps the prompt cache valid between compactions).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.engines.toolkit.boundaries import (
    SUMMARY_KIND,
    group_start,
    last_user_index,
    repair_tool_pairs,
    tail_start_by_budget,
    tail_start_by_count,
)
from agent.types import Message

from .dag import LCM_CONTEXT_PREFIX, Node, is_lcm_rendered
from .summarize import split_open_items

LAST_REQUEST_TAIL_FACTOR = 2
"""The tail reaches back to the last user request while it stays within this many budgets."""
SUMMARY_HEADER = (
    LCM_CONTEXT_PREFIX + " earlier parts of this conversation, summarised; every original "
    "message is kept. Each block is tagged with its node id: call lcm_expand with that id to "
    "read what it covers, or lcm_grep to search the original messages. Only the newest block "
    "lists open requests; an older request shown as in progress may already be done, and the "
    "messages after this one are authoritative.]"
)
TIME_FORMAT = "%Y-%m-%d %H:%M"


def node_tag(node: Node) -> str:
    """The line naming a node in context: ``[lcm node 12 | level 1 | messages 40-95 ...]``."""
    span = f"{node.first_at.strftime(TIME_FORMAT)} to {node.last_at.strftime(TIME_FORMAT)} UTC"
    return (
        f"[lcm node {node.id} | level {node.level} | messages {node.first_message_id}-"
        f"{node.last_message_id} ({node.message_count}) | {span}]"
    )


def node_block(node: Node, *, with_open_items: bool) -> str:
    """A node as shown in context: its tag and summary, open requests only when asked."""
    body = node.content
    if not with_open_items and node.open_items:
        body, _ = split_open_items(body)
    return f"{node_tag(node)}\n{body.strip()}"


def summary_message(roots: Sequence[Node]) -> Message | None:
    """One user message holding every root node, deepest (oldest) first; None without roots."""
    if not roots:
        return None
    blocks = [
        node_block(node, with_open_items=index == len(roots) - 1)
        for index, node in enumerate(roots)
    ]
    return {
        "role": "user",
        "content": "\n\n".join([SUMMARY_HEADER, *blocks]),
        "_kind": SUMMARY_KIND,
    }


def split_context(messages: Sequence[Message]) -> tuple[Message | None, list[Message]]:
    """The system prompt (if first) and the live messages, without earlier rendered summaries."""
    system = messages[0] if messages and messages[0].get("role") == "system" else None
    rest = messages[1:] if system is not None else messages
    return system, [m for m in rest if not is_lcm_rendered(m.get("content"))]


def choose_tail_start(
    live: Sequence[Message], sizes: Sequence[int], *, count: int, budget: int
) -> int:
    """Where the fresh tail starts: at most ``count`` messages and ``budget`` tokens (the last
    tool group always kept whole), reaching back to the last user request when that stays
    within twice the budget. Never inside a tool call/result group."""
    if not live:
        return 0
    by_budget = tail_start_by_budget(live, sizes, 0, budget)
    by_count = tail_start_by_count(live, 0, count)
    start = max(by_budget, by_count)
    start = group_start(live, start, 0) if start < len(live) else by_budget
    last_user = last_user_index(live, 0)
    if last_user is not None and last_user < start:
        if sum(sizes[last_user:]) <= budget * LAST_REQUEST_TAIL_FACTOR:
            start = last_user
    return start


def assemble(
    system: Message | None, roots: Sequence[Node], tail: Sequence[Message]
) -> list[Message]:
    """The new context: system prompt, summaries, then the tail (tool pairs repaired)."""
    summary = summary_message(roots)
    head = [m for m in (system, summary) if m is not None]
    return [*head, *repair_tool_pairs(list(tail))]
