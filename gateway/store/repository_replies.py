"""Replies: planned before the first part is sent, each part recorded as it goes out.

Exactly-once delivery rests on three writes. :meth:`ReplyQueries.plan_reply` stores every part
of a reply and ties every inbound message it answers to it, in one commit, before anything is
sent. :meth:`ReplyQueries.record_sent_part` stores a part's platform id right after the send;
for the last part the same commit closes the reply and every inbound message tied to it. So
after a crash a reply is either finished, or it knows exactly which parts are still to send.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, Update, bindparam, func, insert, select, update

from gateway.store.job_records import JOB_RUN_PREFIX
from gateway.store.records import (
    INBOUND_STATUSES,
    REPLY_FAILED,
    REPLY_SENDING,
    REPLY_SENT,
    InboundRecord,
    ReplyPart,
    ReplyRecord,
    VoiceAudio,
)
from gateway.store.repository_base import NotFoundError, RepositoryBase, rowcount
from gateway.store.repository_inbound import inbound_record
from gateway.store.tables import ApprovalPromptRow, InboundRow, ReplyPartRow, ReplyRow, utcnow

DONE_STATUS = "done"
FAILED_STATUS = "failed"
PROCESSING_STATUS = "processing"
RECENT_IDS_LIMIT = 200
_parts_table = cast(Table, ReplyPartRow.__table__)
_replies_table = cast(Table, ReplyRow.__table__)
_inbound_table = cast(Table, InboundRow.__table__)

# The statements of every reply, built once with bound parameters: building one per call (and
# its cache key, through the ORM's DML path) cost more than running it. Parameter names differ
# from the column names, which SQLAlchemy reserves for the SET clause.
_PLAN_REPLY = insert(_replies_table).returning(_replies_table.c.id)
_RECORD_PART = (
    update(_parts_table)
    .where(
        _parts_table.c.reply_id == bindparam("reply_id_"),
        _parts_table.c.part_index == bindparam("part_index_"),
    )
    .values(platform_message_id=bindparam("sent_id_"), sent_at=bindparam("now_"))
)
_MARK_SENT = (
    update(_replies_table)
    .where(_replies_table.c.id == bindparam("reply_id_"))
    .values(status=REPLY_SENT, updated_at=bindparam("now_"))
    .returning(_replies_table.c.closes_as)
)
_CLOSE_INBOUND = (
    update(_inbound_table)
    .where(_inbound_table.c.reply_id == bindparam("reply_id_"))
    .values(status=bindparam("status_"), updated_at=bindparam("now_"))
)
_SENT_IDS = (
    select(_parts_table.c.platform_message_id)
    .where(_parts_table.c.reply_id == bindparam("reply_id_"))
    .order_by(_parts_table.c.part_index)
)
_LAST_INBOUND = (
    select(func.max(_inbound_table.c.id))
    .where(_inbound_table.c.reply_id == bindparam("reply_id_"))
    .scalar_subquery()
)
_SET_REPLY_IDS = (
    update(_inbound_table)
    .where(_inbound_table.c.id == _LAST_INBOUND)
    .values(reply_platform_ids=bindparam("sent_ids_"))
)


@functools.cache
def _tie_statement(columns: tuple[str, ...]) -> Update:
    """``UPDATE inbound SET <columns> WHERE platform = ? AND platform_message_id IN (...)``,
    built once per set of columns."""
    return (
        update(_inbound_table)
        .where(
            _inbound_table.c.platform == bindparam("platform_"),
            _inbound_table.c.platform_message_id.in_(bindparam("ids_", expanding=True)),
        )
        .values({column: bindparam(f"{column}_") for column in columns})
    )


class ReplyQueries(RepositoryBase):
    """Planning replies, recording their parts, closing the messages they answer."""

    async def plan_reply(
        self,
        platform: str,
        inbound_ids: Sequence[str],
        parts: Sequence[str],
        *,
        session_key: str,
        chat_id: str,
        thread_id: str | None = None,
        closes_as: str = DONE_STATUS,
        failure: str | None = None,
        voices: Mapping[int, VoiceAudio] | None = None,
    ) -> ReplyRecord:
        """Store a reply's parts and tie every inbound message it answers to it (one commit).

        The messages become ``processing``; once the last part is sent they become
        ``closes_as`` (``failed`` for the notice of a failed turn, whose ``failure`` reason is
        stored on them now). ``voices``: the parts (by index) that are voice messages, their
        text the caption. Raises NotFoundError when one of the messages was never
        recorded, ValueError for a reply without parts or an unknown status.
        """
        if not parts:
            raise ValueError("a reply needs at least one part")
        audio = dict(voices or {})
        if closes_as not in INBOUND_STATUSES:
            raise ValueError(f"unknown inbound status {closes_as!r}")
        now = utcnow()
        reply_values = {
            "platform": platform,
            "session_key": session_key,
            "chat_id": chat_id,
            "thread_id": thread_id,
            "status": REPLY_SENDING,
            "closes_as": closes_as,
            "failure": None,
            "created_at": now,
            "updated_at": now,
        }

        def plan(connection: Connection) -> int:
            reply_id = int(connection.execute(_PLAN_REPLY, reply_values).scalar_one())
            rows = [
                {
                    "reply_id": reply_id,
                    "part_index": index,
                    "text": text,
                    "voice": voice.to_json() if (voice := audio.get(index)) else None,
                }
                for index, text in enumerate(parts)
            ]
            connection.execute(insert(_parts_table), rows)
            tie_inbound(
                connection,
                platform,
                inbound_ids,
                reply_id=reply_id,
                failure=failure,
                updated_at=now,
            )
            return reply_id

        reply_id = await self._write(plan)
        return ReplyRecord(
            id=reply_id,
            platform=platform,
            session_key=session_key,
            chat_id=chat_id,
            thread_id=thread_id,
            status=REPLY_SENDING,
            closes_as=closes_as,
            failure=None,
            parts=tuple(
                ReplyPart(index, text, voice=audio.get(index)) for index, text in enumerate(parts)
            ),
            answers=tuple(inbound_ids),
        )

    async def record_sent_part(
        self, reply_id: int, index: int, platform_message_id: str, *, last: bool = False
    ) -> None:
        """Store the platform id of a sent part.

        For the ``last`` part the same commit marks the reply sent and moves every inbound
        message tied to it to the reply's ``closes_as`` status; the batch's last message also
        gets the ids of every part (``reply_platform_ids``). NotFoundError for an unknown part.
        """
        now = utcnow()

        def record(connection: Connection) -> None:
            result = connection.execute(
                _RECORD_PART,
                {
                    "reply_id_": reply_id,
                    "part_index_": index,
                    "sent_id_": platform_message_id,
                    "now_": now,
                },
            )
            if rowcount(result) == 0:
                raise NotFoundError(f"reply {reply_id} has no part {index}")
            if last:
                _close_sent(connection, reply_id, now)

        await self._write(record)

    async def fail_reply(self, reply_id: int, reason: str) -> None:
        """A reply that can never be delivered: it and every message it answers end failed,
        with the reason (one commit). NotFoundError for an unknown reply."""
        now = utcnow()

        def fail(connection: Connection) -> None:
            result = connection.execute(
                update(ReplyRow)
                .where(ReplyRow.id == reply_id)
                .values(status=REPLY_FAILED, failure=reason, updated_at=now)
            )
            if rowcount(result) == 0:
                raise NotFoundError(f"reply {reply_id} does not exist")
            connection.execute(
                update(InboundRow)
                .where(InboundRow.reply_id == reply_id)
                .values(status=FAILED_STATUS, failure=reason, updated_at=now)
            )

        await self._write(fail)

    async def get_reply(self, reply_id: int) -> ReplyRecord | None:
        """The reply with its parts in order, or None."""
        async with self._reading() as session:
            row = await session.get(ReplyRow, reply_id)
            if row is None:
                return None
            parts = (
                await session.scalars(
                    select(ReplyPartRow)
                    .where(ReplyPartRow.reply_id == reply_id)
                    .order_by(ReplyPartRow.part_index)
                )
            ).all()
            answers = (
                await session.scalars(
                    select(InboundRow.platform_message_id)
                    .where(InboundRow.reply_id == reply_id)
                    .order_by(InboundRow.id)
                )
            ).all()
        return ReplyRecord(
            id=row.id,
            platform=row.platform,
            session_key=row.session_key,
            chat_id=row.chat_id,
            thread_id=row.thread_id,
            status=row.status,
            closes_as=row.closes_as,
            failure=row.failure,
            parts=tuple(
                ReplyPart(
                    part.part_index,
                    part.text,
                    part.platform_message_id,
                    VoiceAudio.from_json(part.voice),
                )
                for part in parts
            ),
            answers=tuple(answers),
        )

    async def newest_inbound_before(self, reply_id: int) -> str | None:
        """The platform id of the newest message recorded in the reply's chat before the reply
        was planned: the reply's first part was sent after it (None: no such message)."""
        reply = select(ReplyRow).where(ReplyRow.id == reply_id).subquery()
        query = (
            select(InboundRow.platform_message_id)
            .join(
                reply,
                (InboundRow.platform == reply.c.platform) & (InboundRow.chat_id == reply.c.chat_id),
            )
            .where(
                InboundRow.received_at <= reply.c.created_at,
                # A job's run is no message in the chat: nothing was sent after it.
                ~InboundRow.platform_message_id.startswith(JOB_RUN_PREFIX),
            )
            .order_by(InboundRow.id.desc())
            .limit(1)
        )
        async with self._reading() as session:
            return await session.scalar(query)

    async def recent_chat_ids(
        self, platform: str, chat_id: str, *, limit: int = RECENT_IDS_LIMIT
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Platform ids of the chat's most recent ``limit`` sent reply parts (and approval
        prompts) and received messages: (sent, received). Messages there that are certainly
        not a part in doubt."""
        sent_query = (
            select(ReplyPartRow.platform_message_id)
            .join(ReplyRow, ReplyRow.id == ReplyPartRow.reply_id)
            .where(
                ReplyRow.platform == platform,
                ReplyRow.chat_id == chat_id,
                ReplyPartRow.platform_message_id.is_not(None),
            )
            .order_by(ReplyPartRow.id.desc())
            .limit(limit)
        )
        received_query = (
            select(InboundRow.platform_message_id)
            .where(InboundRow.platform == platform, InboundRow.chat_id == chat_id)
            .order_by(InboundRow.id.desc())
            .limit(limit)
        )
        prompts_query = (
            select(ApprovalPromptRow.platform_message_id)
            .where(ApprovalPromptRow.platform == platform, ApprovalPromptRow.chat_id == chat_id)
            .order_by(ApprovalPromptRow.id.desc())
            .limit(limit)
        )
        async with self._reading() as session:
            sent = (await session.scalars(sent_query)).all()
            prompts = (await session.scalars(prompts_query)).all()  # bot messages too
            received = (await session.scalars(received_query)).all()
        return frozenset(str(i) for i in [*sent, *prompts]), frozenset(received)

    async def inbound_records(
        self, platform: str, platform_message_ids: Sequence[str]
    ) -> dict[str, InboundRecord]:
        """The recorded messages among these platform ids, by platform id (one query)."""
        query = select(InboundRow).where(
            InboundRow.platform == platform,
            InboundRow.platform_message_id.in_(list(platform_message_ids)),
        )
        async with self._reading() as session:
            rows = (await session.scalars(query)).all()
        return {row.platform_message_id: inbound_record(row) for row in rows}


def tie_inbound(
    connection: Connection, platform: str, platform_message_ids: Sequence[str], **values: Any
) -> None:
    """Set ``values`` on every one of these inbound messages (status ``processing`` unless
    given); NotFoundError when one was never recorded."""
    values.setdefault("status", PROCESSING_STATUS)
    parameters = {f"{column}_": value for column, value in values.items()}
    parameters["platform_"] = platform
    parameters["ids_"] = list(platform_message_ids)
    result = connection.execute(_tie_statement(tuple(sorted(values))), parameters)
    if rowcount(result) != len(set(platform_message_ids)):
        raise NotFoundError(
            f"some of {platform} inbound {list(platform_message_ids)} are unrecorded"
        )


def _close_sent(connection: Connection, reply_id: int, now: datetime) -> None:
    reply = connection.execute(_MARK_SENT, {"reply_id_": reply_id, "now_": now}).first()
    if reply is None:
        raise NotFoundError(f"reply {reply_id} does not exist")
    connection.execute(
        _CLOSE_INBOUND, {"reply_id_": reply_id, "status_": reply.closes_as, "now_": now}
    )
    sent = [
        str(platform_id)
        for platform_id in connection.execute(_SENT_IDS, {"reply_id_": reply_id}).scalars()
        if platform_id is not None
    ]
    # The ids of the replies sent, on the message that closed the turn (as before replies
    # had parts of their own; tools and older checks read them there).
    connection.execute(_SET_REPLY_IDS, {"reply_id_": reply_id, "sent_ids_": sent})
