"""The summary DAG as pure data: what is original material, leaf chunking, condensation plans
and the invariants every stored DAG keeps.

A *source* is an original message of the session (user, assistant, tool, a compressor summary
that was in context): everything except system prompts, rewritten copies and the engine's own
rendered summaries. Leaves cover consecutive sources, leaf after leaf from the first source on;
a condensed node covers consecutive nodes of the levels below. Roots (nodes without a parent),
ordered by what they cover, never rise in level: older history sits in deeper nodes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent.types import Message

ORIGINAL_KINDS = frozenset({"message", "summary", "notice"})
"""Stored message kinds that are original material (``derived`` rows are rewritten copies)."""
LCM_CONTEXT_PREFIX = "[lcm summaries:"
"""Every context message the engine renders starts with this, so it is never a source."""
OVERSIZE_CHUNK_FACTOR = 2
"""A chunk may run past its budget to keep a tool group whole, up to this factor."""


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """One original message: its row id, role, stored token count, time and content."""

    id: int
    role: str
    tokens: int
    created_at: datetime
    message: Message


@dataclass(frozen=True, slots=True)
class Node:
    """One stored summary node: what it covers, when, how big, and where it sits."""

    id: int
    session_id: int
    level: int
    first_message_id: int
    last_message_id: int
    message_count: int
    first_at: datetime
    last_at: datetime
    token_count: int
    source_tokens: int
    content: str
    open_items: str
    mode: str
    parent_id: int | None
    child_ids: tuple[int, ...]

    @property
    def is_leaf(self) -> bool:
        """Whether the node summarises messages (level 0) rather than other nodes."""
        return self.level == 0


def is_lcm_rendered(content: Any) -> bool:
    """Whether a message content is a summary block this engine rendered into the context."""
    return isinstance(content, str) and content.startswith(LCM_CONTEXT_PREFIX)


def is_source(kind: str, role: str, content: Any) -> bool:
    """Whether a stored message is original material the DAG must cover."""
    return kind in ORIGINAL_KINDS and role != "system" and not is_lcm_rendered(content)


def covered_until(nodes: Sequence[Node]) -> int:
    """The id of the last source covered by a leaf (0 when nothing is covered yet)."""
    return max((n.last_message_id for n in nodes if n.is_leaf), default=0)


def uncovered_before(
    sources: Sequence[SourceMessage], nodes: Sequence[Node], boundary_id: int | None
) -> list[SourceMessage]:
    """Sources no leaf covers yet whose id is below ``boundary_id`` (all when None)."""
    done = covered_until(nodes)
    return [s for s in sources if s.id > done and (boundary_id is None or s.id < boundary_id)]


def chunk_for_leaves(
    sources: Sequence[SourceMessage], chunk_tokens: int
) -> list[list[SourceMessage]]:
    """Cut consecutive sources into leaf chunks of about ``chunk_tokens`` each.

    A chunk ends before a message that opens a group (anything but a tool result), so a tool
    call and its results stay in one leaf unless the group alone runs far past the budget.
    """
    chunks: list[list[SourceMessage]] = []
    current: list[SourceMessage] = []
    used = 0
    for source in sources:
        over = used + source.tokens > chunk_tokens
        group_edge = source.role != "tool"
        far_over = used + source.tokens > chunk_tokens * OVERSIZE_CHUNK_FACTOR
        if current and over and (group_edge or far_over):
            chunks.append(current)
            current, used = [], 0
        current.append(source)
        used += source.tokens
    if current:
        chunks.append(current)
    return chunks


def roots(nodes: Sequence[Node]) -> list[Node]:
    """Nodes without a parent, oldest coverage first (deepest first, by the level order)."""
    return sorted((n for n in nodes if n.parent_id is None), key=lambda n: n.first_message_id)


def plan_condensation(
    root_nodes: Sequence[Node], fanout: int, budget_tokens: int
) -> list[Node] | None:
    """The roots to condense next into one node, or None when the roots are fine as they are.

    The oldest ``fanout`` roots of the lowest level that has that many are condensed; when the
    roots together exceed ``budget_tokens``, the oldest roots (at least two) of the lowest level
    holding two or more are condensed even before the fanout is reached.
    """
    by_level: dict[int, list[Node]] = {}
    for node in root_nodes:
        by_level.setdefault(node.level, []).append(node)
    for level in sorted(by_level):
        if len(by_level[level]) >= fanout:
            return by_level[level][:fanout]
    if sum(n.token_count for n in root_nodes) <= budget_tokens:
        return None
    for level in sorted(by_level):
        if len(by_level[level]) >= 2:
            return by_level[level][:fanout]
    return None


def depth(nodes: Sequence[Node]) -> int:
    """Levels in the DAG (0 when there is no node)."""
    return max((n.level + 1 for n in nodes), default=0)


def depth_bound(leaf_count: int) -> int:
    """The most levels a DAG over ``leaf_count`` leaves may have (condensing two or more)."""
    return 1 + math.ceil(math.log2(leaf_count)) if leaf_count > 1 else 1


def invariant_violations(nodes: Sequence[Node], source_ids: Sequence[int]) -> list[str]:
    """Every way the DAG breaks its invariants for sources ``source_ids`` (ordered); [] is good."""
    position = {sid: index for index, sid in enumerate(source_ids)}
    problems = _leaf_violations([n for n in nodes if n.is_leaf], position, list(source_ids))
    by_id = {n.id: n for n in nodes}
    for node in nodes:
        if not node.is_leaf:
            problems.extend(_condensed_violations(node, by_id, position))
    leaves = sum(1 for n in nodes if n.is_leaf)
    if depth(nodes) > depth_bound(leaves):
        problems.append(f"depth {depth(nodes)} exceeds {depth_bound(leaves)} for {leaves} leaves")
    return problems


def _leaf_violations(
    leaves: list[Node], position: dict[int, int], source_ids: list[int]
) -> list[str]:
    problems: list[str] = []
    expected_start = 0
    for leaf in sorted(leaves, key=lambda n: n.first_message_id):
        first = position.get(leaf.first_message_id)
        last = position.get(leaf.last_message_id)
        if first is None or last is None:
            problems.append(f"leaf {leaf.id} names messages that are not sources")
            continue
        if first != expected_start:
            problems.append(f"leaf {leaf.id} starts at source #{first}, expected #{expected_start}")
        if leaf.message_count != last - first + 1:
            problems.append(f"leaf {leaf.id} counts {leaf.message_count} of {last - first + 1}")
        if leaf.token_count >= leaf.source_tokens:
            problems.append(f"leaf {leaf.id} is not shorter than the messages it covers")
        expected_start = last + 1
    return problems


def _condensed_violations(
    node: Node, by_id: dict[int, Node], position: dict[int, int]
) -> list[str]:
    children = [by_id[c] for c in node.child_ids if c in by_id]
    if len(children) != len(node.child_ids) or len(children) < 2:
        return [f"node {node.id} has missing children or fewer than two"]
    problems = []
    for before, after in itertools.pairwise(children):
        if position.get(after.first_message_id, -1) != position.get(before.last_message_id, -2) + 1:
            problems.append(f"node {node.id}: children {before.id} and {after.id} leave a gap")
    if (node.first_message_id, node.last_message_id) != (
        children[0].first_message_id,
        children[-1].last_message_id,
    ):
        problems.append(f"node {node.id} range differs from its children's")
    if any(c.parent_id != node.id for c in children):
        problems.append(f"node {node.id}: a child names another parent")
    if node.level != max(c.level for c in children) + 1:
        problems.append(f"node {node.id} level {node.level} is not one above its children")
    if node.token_count >= sum(c.token_count for c in children):
        problems.append(f"node {node.id} is not shorter than its children together")
    return problems
