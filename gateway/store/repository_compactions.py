"""Compactions: rewriting which messages are in context, and the record of every attempt."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Row, Table, bindparam, func, insert, select, true, update

from agent.types import CompactionResult, Message
from gateway.store.records import DERIVED_KIND, SUMMARY_KIND, CompactionRecord
from gateway.store.repository_base import NotFoundError, RepositoryBase, touch_session
from gateway.store.repository_messages import insert_in_context, message_row_values
from gateway.store.tables import CompactionRow, MessageRow, SessionRow, utcnow

compactions_table = cast(Table, CompactionRow.__table__)

SKIPPED_OUTCOME = "skipped"
"""The outcome of a compaction that decided not to change anything."""


class CompactionQueries(RepositoryBase):
    """Applying a compaction's new context and listing past compactions."""

    async def apply_compaction(
        self, session_id: int, result: CompactionResult, new_token_counts: dict[int, int]
    ) -> CompactionRecord:
        """Make ``result.messages`` the session's context, in one short transaction.

        Messages with ``"_id"`` keep their row; the others are stored as new rows (kind
        ``"summary"`` when marked ``"_kind": "summary"``, else ``"derived"``), token count
        ``new_token_counts[index in result.messages]``. Every other message of the session
        leaves the context but stays stored. The compaction is recorded and the session's
        summary, compression count and engine state are updated. Raises NotFoundError for an
        unknown session and ValueError when a kept ``"_id"`` is not one of its messages.
        """
        kept_ids = [message["_id"] for message in result.messages if "_id" in message]
        if len(set(kept_ids)) != len(kept_ids):
            raise ValueError("the new context holds the same stored message twice")
        now = utcnow()

        def rewrite_context(connection: Connection) -> CompactionRecord:
            compression_count = _compression_count(connection, session_id)
            connection.execute(
                update(MessageRow)
                .where(MessageRow.session_id == session_id, MessageRow.in_context == true())
                .values(in_context=False, ctx_pos=None)
            )
            new_ids = _insert_new_messages(connection, session_id, result, new_token_counts, now)
            _bring_back_kept(connection, session_id, result)
            summary_message_id = next(
                (
                    new_id
                    for new_id, message in zip(new_ids, _new_messages(result), strict=True)
                    if message.get("_kind") == SUMMARY_KIND
                ),
                None,
            )
            row = _insert_compaction(
                connection, _compaction_values(session_id, result, summary_message_id, now)
            )
            touch_session(
                connection,
                session_id,
                updated_at=now,
                **_session_changes(result, compression_count),
            )
            return compaction_record(row, new_message_ids=tuple(new_ids))

        return await self._write(rewrite_context)

    async def record_compaction_attempt(
        self,
        session_id: int,
        *,
        trigger: str,
        outcome: str,
        detail: str,
        tokens_before: int,
        degraded: bool = True,
    ) -> CompactionRecord:
        """Record a compaction that changed nothing (skipped, failed) so it stays visible."""
        values: dict[str, Any] = {
            "session_id": session_id,
            "trigger": trigger,
            "outcome": outcome,
            "degraded": degraded,
            "first_message_id": None,
            "last_message_id": None,
            "summary": None,
            "summary_message_id": None,
            "tokens_before": tokens_before,
            "tokens_after": tokens_before,
            "detail": detail,
            "created_at": utcnow(),
        }
        return await self._write(
            lambda connection: compaction_record(_insert_compaction(connection, values))
        )

    async def list_compactions(self, session_id: int) -> list[CompactionRecord]:
        """Every compaction attempt of the session, oldest first."""
        query = (
            select(CompactionRow)
            .where(CompactionRow.session_id == session_id)
            .order_by(CompactionRow.id)
        )
        async with self._reading() as session:
            rows = (await session.scalars(query)).all()
        return [compaction_record(row) for row in rows]


def _compression_count(connection: Connection, session_id: int) -> int:
    count = connection.scalar(
        select(SessionRow.compression_count).where(SessionRow.id == session_id)
    )
    if count is None:
        raise NotFoundError(f"session {session_id} does not exist")
    return count


def _new_messages(result: CompactionResult) -> list[Message]:
    return [message for message in result.messages if "_id" not in message]


def _insert_new_messages(
    connection: Connection,
    session_id: int,
    result: CompactionResult,
    new_token_counts: dict[int, int],
    now: datetime,
) -> list[int]:
    rows = [
        message_row_values(
            session_id,
            message,
            new_token_counts.get(position, 0),
            kind=SUMMARY_KIND if message.get("_kind") == SUMMARY_KIND else DERIVED_KIND,
            ctx_pos=position,
            created_at=now,
        )
        for position, message in enumerate(result.messages)
        if "_id" not in message
    ]
    # Safe for insert_in_context: the session has no in-context rows at this point.
    return insert_in_context(connection, session_id, rows)


def _bring_back_kept(connection: Connection, session_id: int, result: CompactionResult) -> None:
    kept = [
        {"kept_id": message["_id"], "kept_pos": position}
        for position, message in enumerate(result.messages)
        if "_id" in message
    ]
    if not kept:
        return
    connection.execute(
        update(MessageRow)
        .where(MessageRow.id == bindparam("kept_id"), MessageRow.session_id == session_id)
        .values(in_context=True, ctx_pos=bindparam("kept_pos")),
        kept,
    )
    # A kept id from another session (or none at all) matched no row: refuse the whole change.
    in_context = connection.scalar(
        select(func.count(MessageRow.id)).where(
            MessageRow.session_id == session_id, MessageRow.in_context == true()
        )
    )
    if in_context != len(result.messages):
        raise ValueError(f"the new context names messages that session {session_id} does not hold")


def _compaction_values(
    session_id: int, result: CompactionResult, summary_message_id: int | None, now: datetime
) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "trigger": result.trigger,
        "outcome": result.outcome,
        "degraded": result.degraded,
        "first_message_id": result.first_compacted_id,
        "last_message_id": result.last_compacted_id,
        "summary": result.summary,
        "summary_message_id": summary_message_id,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "detail": result.detail,
        "created_at": now,
        "estimated_saving_usd": result.estimated_saving_usd,
        "estimated_cost_usd": result.estimated_cost_usd,
    }


def _insert_compaction(connection: Connection, values: dict[str, Any]) -> Row[Any]:
    return connection.execute(
        insert(compactions_table).values(values).returning(*compactions_table.c)
    ).one()


def _session_changes(result: CompactionResult, compression_count: int) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if result.summary is not None:
        changes["previous_summary"] = result.summary
    if result.outcome != SKIPPED_OUTCOME:
        changes["compression_count"] = compression_count + 1
    if result.engine_state is not None:
        changes["engine_state"] = result.engine_state.to_json()
    return changes


def compaction_record(
    row: CompactionRow | Row[Any], new_message_ids: tuple[int, ...] = ()
) -> CompactionRecord:
    """The immutable view of a compaction row."""
    return CompactionRecord(
        id=row.id,
        session_id=row.session_id,
        trigger=row.trigger,
        outcome=row.outcome,
        degraded=row.degraded,
        first_message_id=row.first_message_id,
        last_message_id=row.last_message_id,
        summary=row.summary,
        summary_message_id=row.summary_message_id,
        tokens_before=row.tokens_before,
        tokens_after=row.tokens_after,
        detail=row.detail,
        created_at=row.created_at,
        new_message_ids=new_message_ids,
        estimated_saving_usd=row.estimated_saving_usd,
        estimated_cost_usd=row.estimated_cost_usd,
    )
