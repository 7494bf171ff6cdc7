"""The engine's own tables and queries, as requests to the host's archive.

The tables are created by the plugin's own migration chain (``migrations/`` beside this module,
run by the host after its core revisions, see :mod:`agent.engines.plugin_migrations`): the
summary nodes (``lcm_nodes``) and which nodes a condensed node covers (``lcm_node_children``).
Original messages are read through the :class:`~agent.engines.message_archive.MessageArchive`;
the DAG is read with record queries and written as changes queued in the host's group commit
(:meth:`~agent.engines.message_archive.MessageArchive.write_records`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from agent.engines.message_archive import (
    DeleteRows,
    InsertedId,
    InsertRows,
    MessageArchive,
    Record,
    RecordQuery,
    RecordValue,
    RowsOf,
    UpdateRows,
    WriteValue,
)

from .dag import Node, SourceMessage, is_source

NODES = "lcm_nodes"
"""The summary nodes (created by the plugin's revision ``lcm_0001``)."""
CHILDREN = "lcm_node_children"
"""Which nodes a condensed node covers: ``parent_id``, ``child_id``, ``position``."""


def as_utc(value: datetime) -> datetime:
    """A stored datetime as timezone-aware UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class NewNode:
    """A node about to be stored: what it covers and its summary (children for condensed)."""

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
    completed_items: str
    open_items: str
    mode: str
    child_ids: tuple[int, ...] = ()


class LcmStore:
    """Reads and writes the DAG in the archive's database; sources are the archive's messages."""

    def __init__(self, archive: MessageArchive) -> None:
        self.archive = archive

    async def sources(self, session_id: int) -> list[SourceMessage]:
        """Every original message of the session, oldest first."""
        stored = await self.archive.session_messages(session_id)
        return [
            SourceMessage(m.id, m.role, max(1, m.token_count), as_utc(m.created_at), m.message)
            for m in stored
            if is_source(m.kind, m.role, m.message.get("content"))
        ]

    async def nodes(self, session_ids: Sequence[int]) -> list[Node]:
        """Every node of the sessions, in id order, with their children."""
        if not session_ids:
            return []
        rows = await self.archive.read_records(
            RecordQuery(NODES, {"session_id": list(session_ids)}, order_by=("id",))
        )
        children = await self._children([_int(row["id"]) for row in rows])
        return [_node(row, children.get(_int(row["id"]), ())) for row in rows]

    async def node(self, node_id: int) -> Node | None:
        """One node by id, or None."""
        rows = await self.archive.read_records(RecordQuery(NODES, {"id": node_id}))
        if not rows:
            return None
        return _node(rows[0], (await self._children([node_id])).get(node_id, ()))

    async def add_node(self, new: NewNode) -> Node:
        """Store a node, link its children to it, and return it as stored."""
        now = datetime.now(UTC)
        values: dict[str, RecordValue] = {
            "session_id": new.session_id,
            "level": new.level,
            "first_message_id": new.first_message_id,
            "last_message_id": new.last_message_id,
            "message_count": new.message_count,
            "first_at": new.first_at,
            "last_at": new.last_at,
            "token_count": new.token_count,
            "source_tokens": new.source_tokens,
            "content": new.content,
            "completed_items": new.completed_items,
            "open_items": new.open_items,
            "mode": new.mode,
            "parent_id": None,
            "created_at": now,
        }
        node = InsertedId(change=0)
        links: list[dict[str, WriteValue]] = [
            {"parent_id": node, "child_id": child, "position": index}
            for index, child in enumerate(new.child_ids)
        ]
        inserted = await self.archive.write_records(
            InsertRows(NODES, [values], id_column="id"),
            InsertRows(CHILDREN, links),
            UpdateRows(NODES, {"id": list(new.child_ids)}, {"parent_id": node}),
        )
        return _node({**values, "id": inserted[0][0]}, new.child_ids)

    async def forget(self, session_ids: Sequence[int], message_ids: Sequence[int]) -> None:
        """Delete the DAG of these sessions (the messages' search rows go with the messages:
        the host deletes them, as the trigger filling them is the core schema's)."""
        nodes = RowsOf(NODES, "id", {"session_id": list(session_ids)})
        await self.archive.write_records(
            DeleteRows(CHILDREN, {"parent_id": nodes}),
            DeleteRows(CHILDREN, {"child_id": nodes}),
            DeleteRows(NODES, {"session_id": list(session_ids)}),
        )

    async def _children(self, node_ids: list[int]) -> dict[int, tuple[int, ...]]:
        """The children of each of these nodes, in order."""
        if not node_ids:
            return {}
        links = await self.archive.read_records(
            RecordQuery(CHILDREN, {"parent_id": node_ids}, order_by=("parent_id", "position"))
        )
        children: dict[int, list[int]] = {}
        for link in links:
            children.setdefault(_int(link["parent_id"]), []).append(_int(link["child_id"]))
        return {parent: tuple(ids) for parent, ids in children.items()}


def _int(value: RecordValue) -> int:
    if not isinstance(value, int):
        raise TypeError(f"expected an integer column, got {value!r}")
    return value


def _time(value: RecordValue) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime column, got {value!r}")
    return as_utc(value)


def _node(row: Record, child_ids: tuple[int, ...]) -> Node:
    parent = row["parent_id"]
    return Node(
        id=_int(row["id"]),
        session_id=_int(row["session_id"]),
        level=_int(row["level"]),
        first_message_id=_int(row["first_message_id"]),
        last_message_id=_int(row["last_message_id"]),
        message_count=_int(row["message_count"]),
        first_at=_time(row["first_at"]),
        last_at=_time(row["last_at"]),
        token_count=_int(row["token_count"]),
        source_tokens=_int(row["source_tokens"]),
        content=str(row["content"]),
        open_items=str(row["open_items"]),
        mode=str(row["mode"]),
        parent_id=None if parent is None else _int(parent),
        child_ids=child_ids,
    )
