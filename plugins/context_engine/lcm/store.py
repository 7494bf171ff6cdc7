"""The engine's own tables and queries, through SQLAlchemy Core on the host's archive.

The tables are created by the plugin's own migration chain (``migrations/`` beside this module,
run by the host after its core revisions, see :mod:`agent.engines.plugin_migrations`); they are
described here on a MetaData of their own, so the host's models know nothing about this plugin.
Original messages are read through the :class:`~agent.engines.message_archive.MessageArchive`; the
DAG's writes are jobs queued in the host's group commit
(:meth:`~agent.engines.message_archive.MessageArchive.write_records`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
)
from sqlalchemy import update as sql_update

from agent.engines.message_archive import MessageArchive

from .dag import Node, SourceMessage, is_source

lcm_metadata = MetaData()
"""The lossless engine's tables (created by the plugin's revision ``lcm_0001``)."""

nodes_table = Table(
    "lcm_nodes",
    lcm_metadata,
    Column("id", Integer, primary_key=True),
    Column("session_id", Integer, nullable=False),
    Column("level", Integer, nullable=False),
    Column("first_message_id", Integer, nullable=False),
    Column("last_message_id", Integer, nullable=False),
    Column("message_count", Integer, nullable=False),
    Column("first_at", DateTime(timezone=True), nullable=False),
    Column("last_at", DateTime(timezone=True), nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("source_tokens", Integer, nullable=False),
    Column("content", Text, nullable=False),
    Column("completed_items", Text, nullable=False),
    Column("open_items", Text, nullable=False),
    Column("mode", String, nullable=False),
    Column("parent_id", Integer, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

children_table = Table(
    "lcm_node_children",
    lcm_metadata,
    Column("parent_id", Integer, primary_key=True),
    Column("child_id", Integer, primary_key=True),
    Column("position", Integer, nullable=False),
)


def as_utc(value: datetime) -> datetime:
    """A stored datetime as timezone-aware UTC (SQLite keeps naive UTC)."""
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

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.archive.dialect_name

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
        return await self.archive.read_records(lambda c: _read_nodes(c, list(session_ids)))

    async def node(self, node_id: int) -> Node | None:
        """One node by id, or None."""
        return await self.archive.read_records(lambda c: _read_node(c, node_id))

    async def add_node(self, new: NewNode) -> Node:
        """Store a node, link its children to it, and return it as stored."""
        now = datetime.now(UTC)
        values = {
            "session_id": new.session_id,
            "level": new.level,
            "first_message_id": new.first_message_id,
            "last_message_id": new.last_message_id,
            "message_count": new.message_count,
            "first_at": self._time(new.first_at),
            "last_at": self._time(new.last_at),
            "token_count": new.token_count,
            "source_tokens": new.source_tokens,
            "content": new.content,
            "completed_items": new.completed_items,
            "open_items": new.open_items,
            "mode": new.mode,
            "parent_id": None,
            "created_at": self._time(now),
        }
        node_id = await self.archive.write_records(lambda c: _insert_node(c, values, new.child_ids))
        stored = {**values, "id": node_id, "first_at": new.first_at, "last_at": new.last_at}
        return _node({**stored, "created_at": now}, new.child_ids)

    async def forget(self, session_ids: Sequence[int], message_ids: Sequence[int]) -> None:
        """Delete the DAG of these sessions (the messages' search rows go with the messages:
        the host deletes them, as the trigger filling them is the core schema's)."""
        await self.archive.write_records(lambda c: _forget(c, list(session_ids)))

    def _time(self, value: datetime) -> datetime:
        utc = as_utc(value)
        # SQLite has no zone: keep naive UTC there, as the host's store does.
        return utc.replace(tzinfo=None) if self.dialect == "sqlite" else utc


def _read_nodes(connection: Connection, session_ids: list[int]) -> list[Node]:
    query = (
        select(nodes_table)
        .where(nodes_table.c.session_id.in_(session_ids))
        .order_by(nodes_table.c.id)
    )
    rows = connection.execute(query).mappings().all()
    ids = [row["id"] for row in rows]
    links = (
        connection.execute(
            select(children_table)
            .where(children_table.c.parent_id.in_(ids))
            .order_by(children_table.c.parent_id, children_table.c.position)
        )
        .mappings()
        .all()
        if ids
        else []
    )
    children: dict[int, list[int]] = {}
    for link in links:
        children.setdefault(link["parent_id"], []).append(link["child_id"])
    return [_node(row, tuple(children.get(row["id"], ()))) for row in rows]


def _read_node(connection: Connection, node_id: int) -> Node | None:
    query = select(nodes_table).where(nodes_table.c.id == node_id)
    row = connection.execute(query).mappings().first()
    if row is None:
        return None
    links = connection.execute(
        select(children_table.c.child_id)
        .where(children_table.c.parent_id == node_id)
        .order_by(children_table.c.position)
    )
    return _node(row, tuple(links.scalars()))


def _insert_node(connection: Connection, values: dict[str, Any], child_ids: tuple[int, ...]) -> int:
    """A write job: the node, its children's links and their parent; returns the node's id."""
    result = connection.execute(insert(nodes_table).returning(nodes_table.c.id), values)
    node_id = int(result.scalar_one())
    if child_ids:
        connection.execute(
            insert(children_table),
            [
                {"parent_id": node_id, "child_id": child, "position": index}
                for index, child in enumerate(child_ids)
            ],
        )
        connection.execute(
            sql_update(nodes_table)
            .where(nodes_table.c.id.in_(list(child_ids)))
            .values(parent_id=node_id)
        )
    return node_id


def _forget(connection: Connection, session_ids: list[int]) -> None:
    """A write job: nodes of the sessions with their links (the nodes' index follows by its
    trigger)."""
    nodes = select(nodes_table.c.id).where(nodes_table.c.session_id.in_(session_ids))
    connection.execute(
        delete(children_table).where(
            children_table.c.parent_id.in_(nodes) | children_table.c.child_id.in_(nodes)
        )
    )
    connection.execute(delete(nodes_table).where(nodes_table.c.session_id.in_(session_ids)))


def _node(row: Any, child_ids: tuple[int, ...]) -> Node:
    return Node(
        id=row["id"],
        session_id=row["session_id"],
        level=row["level"],
        first_message_id=row["first_message_id"],
        last_message_id=row["last_message_id"],
        message_count=row["message_count"],
        first_at=as_utc(row["first_at"]),
        last_at=as_utc(row["last_at"]),
        token_count=row["token_count"],
        source_tokens=row["source_tokens"],
        content=row["content"],
        open_items=row["open_items"],
        mode=row["mode"],
        parent_id=row["parent_id"],
        child_ids=child_ids,
    )
