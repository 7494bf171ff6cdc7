"""``/forget``: everything stored about one user, found and then deleted in one transaction.

A user's own conversations are the sessions they started in which nobody else ever wrote
(their private chat, their per-user group sessions); a group conversation shared with others
stays, since it holds the others' messages too. With those sessions go their messages,
attachments, compactions, usage and tool-call rows; the user's usage, tool-call and
spoken-character rows elsewhere, their finished inbound records (raw text included), their
quarantined updates and the finished replies of their conversations (voice parts included) go
too. Blob files no longer referenced by any attachment or voice part are returned for the caller
to delete.
Run-time access decisions (``/allow``) are the admins' and stay.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, exists, or_, select

from gateway.store.records import REPLY_SENT, UNFINISHED_INBOUND_STATUSES
from gateway.store.repository_base import RepositoryBase
from gateway.store.repository_dead_letters import delete_users_dead_letters
from gateway.store.repository_jobs import delete_users_jobs
from gateway.store.repository_memory import delete_users_memories
from gateway.store.repository_voice import forget_speech, voice_blobs_in_use
from gateway.store.tables import (
    ApiUsageRow,
    AttachmentRow,
    CompactionRow,
    InboundRow,
    MessageRow,
    ReplyPartRow,
    ReplyRow,
    SessionRow,
    ToolCallRow,
    ToolOutputRow,
)


@dataclass(frozen=True, slots=True)
class OwnedData:
    """What belongs to a user: their own sessions (ids, keys) and those sessions' messages."""

    session_ids: list[int]
    session_keys: list[str]
    message_ids: list[int]
    engines: list[str]
    """The context engines those sessions used (each is asked to forget its own records)."""


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """How much was deleted (counts only: the log line never says what)."""

    sessions: int
    messages: int
    attachments: int
    usage_rows: int
    inbound: int
    unreferenced_blobs: list[str]
    quarantined: int = 0
    """Quarantined updates of theirs (raw payloads hold their text)."""
    memories: int = 0
    """Entries of their personal memory (a group chat's memory stays with the group)."""
    jobs: int = 0
    """Their scheduled jobs (and their time zone)."""


SEARCH_TABLE = "lcm_messages_fts"
"""SQLite's full-text copy of every message, filled by a trigger of migration 0002 (PostgreSQL
indexes the messages table itself, so its entries go with the rows)."""


def _delete_search_rows(connection: Connection, message_ids: list[int]) -> None:
    if connection.dialect.name != "sqlite" or not message_ids:
        return
    found = connection.exec_driver_sql(
        "SELECT 1 FROM sqlite_master WHERE name = ?", (SEARCH_TABLE,)
    ).first()
    if found is None:
        return
    for start in range(0, len(message_ids), 500):
        chunk = ", ".join(str(int(i)) for i in message_ids[start : start + 500])
        connection.exec_driver_sql(f"DELETE FROM {SEARCH_TABLE} WHERE rowid IN ({chunk})")


class ForgetQueries(RepositoryBase):
    """Finding and deleting one user's data."""

    async def owned_data(self, platform: str, user_id: str) -> OwnedData:
        """The user's own sessions and their messages (see the module docstring)."""
        someone_else = exists().where(
            InboundRow.platform == platform,
            InboundRow.session_key == SessionRow.key,
            InboundRow.user_id != user_id,
        )
        query = select(SessionRow.id, SessionRow.key, SessionRow.engine).where(
            SessionRow.platform == platform, SessionRow.user_id == user_id, ~someone_else
        )
        async with self._reading() as session:
            sessions = (await session.execute(query)).all()
            ids = [int(row[0]) for row in sessions]
            messages = (
                await session.execute(
                    select(MessageRow.id)
                    .where(MessageRow.session_id.in_(ids))
                    .order_by(MessageRow.id)
                )
            ).scalars()
            message_ids = [int(m) for m in messages]
        keys = sorted({str(row[1]) for row in sessions})
        return OwnedData(ids, keys, message_ids, sorted({str(row[2]) for row in sessions}))

    async def forget_user(self, platform: str, user_id: str, owned: OwnedData) -> ForgetReport:
        """Delete ``owned`` and the user's other rows; one transaction."""
        user_key = f"{platform}:{user_id}"

        def forget(connection: Connection) -> ForgetReport:
            ids, message_ids = owned.session_ids, owned.message_ids
            blobs = set(
                connection.execute(
                    select(AttachmentRow.sha256).where(AttachmentRow.message_id.in_(message_ids))
                ).scalars()
            )
            attachments = connection.execute(
                delete(AttachmentRow).where(AttachmentRow.message_id.in_(message_ids))
            ).rowcount
            messages = connection.execute(
                delete(MessageRow).where(MessageRow.session_id.in_(ids))
            ).rowcount
            _delete_search_rows(connection, message_ids)
            connection.execute(delete(CompactionRow).where(CompactionRow.session_id.in_(ids)))
            connection.execute(delete(ToolOutputRow).where(ToolOutputRow.session_id.in_(ids)))
            connection.execute(
                delete(ToolCallRow).where(
                    or_(ToolCallRow.session_id.in_(ids), ToolCallRow.user_key == user_key)
                )
            )
            usage = connection.execute(
                delete(ApiUsageRow).where(
                    or_(ApiUsageRow.session_id.in_(ids), ApiUsageRow.user_key == user_key)
                )
            ).rowcount
            finished = ~InboundRow.status.in_(UNFINISHED_INBOUND_STATUSES)
            inbound = connection.execute(
                delete(InboundRow).where(
                    InboundRow.platform == platform,
                    finished,
                    or_(
                        InboundRow.user_id == user_id,
                        InboundRow.session_key.in_(owned.session_keys),
                    ),
                )
            ).rowcount
            sent = select(ReplyRow.id).where(
                ReplyRow.platform == platform,
                ReplyRow.session_key.in_(owned.session_keys),
                ReplyRow.status == REPLY_SENT,
            )
            sent_ids = list(connection.execute(sent).scalars())
            voice_blobs = forget_speech(connection, user_key, sent_ids)
            connection.execute(delete(ReplyPartRow).where(ReplyPartRow.reply_id.in_(sent_ids)))
            connection.execute(delete(ReplyRow).where(ReplyRow.id.in_(sent_ids)))
            sessions = connection.execute(delete(SessionRow).where(SessionRow.id.in_(ids))).rowcount
            still_used = set(
                connection.execute(
                    select(AttachmentRow.sha256).where(AttachmentRow.sha256.in_(blobs))
                ).scalars()
            ) | voice_blobs_in_use(connection, voice_blobs)
            blobs |= voice_blobs
            quarantined = delete_users_dead_letters(connection, platform, user_id)
            memories = delete_users_memories(connection, platform, user_id)
            jobs = delete_users_jobs(connection, platform, user_id)
            return ForgetReport(
                sessions,
                messages,
                attachments,
                usage,
                inbound,
                sorted(blobs - still_used),
                quarantined,
                memories,
                jobs,
            )

        return await self._write(forget)
