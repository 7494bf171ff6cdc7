"""Exporting a session as JSON-safe dicts (``hermes sessions export`` writes them as JSONL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlalchemy import select

from agent.attachments import message_attachments
from gateway.store.records import CompactionRecord, MessageRecord
from gateway.store.repository_compactions import CompactionQueries
from gateway.store.repository_messages import message_record
from gateway.store.tables import MessageRow, messages_table

EXPORT_PAGE_SIZE = 500
"""Messages read per query, so a huge session is never held in memory at once."""


class ExportQueries(CompactionQueries):
    """Streaming every stored message and compaction of a session."""

    async def export_session(self, session_id: int) -> AsyncIterator[dict[str, Any]]:
        """Every stored message (``"type": "message"``) in order, then every compaction
        (``"type": "compaction"``), as JSON-safe dicts with ISO-8601 datetimes.

        Messages are read a page at a time and no transaction stays open between pages.
        """
        after_id = 0
        while True:
            query = (
                select(messages_table)
                .where(MessageRow.session_id == session_id, MessageRow.id > after_id)
                .order_by(MessageRow.id)
                .limit(EXPORT_PAGE_SIZE)
            )
            async with self._reading() as session:
                page = [message_record(row) for row in await session.execute(query)]
            for record in page:
                yield exported_message(record)
            if len(page) < EXPORT_PAGE_SIZE:
                break
            after_id = page[-1].id
        for compaction in await self.list_compactions(session_id):
            yield exported_compaction(compaction)


def exported_message(record: MessageRecord) -> dict[str, Any]:
    """A stored message as an export line: every column, ``"type": "message"``, and the
    references of its attachments (``"attachments"``: blob SHA-256, MIME type, size...)."""
    line = {"type": "message", **_json_safe(asdict(record))}
    attached = message_attachments(record.content)
    if attached:
        line["attachments"] = [ref.to_dict() for ref in attached]
    return line


def exported_compaction(record: CompactionRecord) -> dict[str, Any]:
    """A compaction as an export line: every column, ``"type": "compaction"``."""
    fields = asdict(record)
    del fields["new_message_ids"]  # only meaningful to the caller of apply_compaction
    return {"type": "compaction", **_json_safe(fields)}


def _json_safe(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in fields.items()
    }
