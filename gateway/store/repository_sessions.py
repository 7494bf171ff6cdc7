"""Sessions: one conversation per key at a time, plus the engine state kept with it."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, Row, Select, Table, func, insert, select, true, update
from sqlalchemy.exc import IntegrityError

from gateway.store.records import SessionRecord, SessionSummary
from gateway.store.repository_base import RepositoryBase, touch_session
from gateway.store.tables import MessageRow, SessionRow, utcnow

DEFAULT_ENGINE = "compressor"
"""The context engine a new session starts with."""

UPDATABLE_SESSION_FIELDS = frozenset(
    {
        "last_prompt_tokens",
        "engine",
        "engine_state",
        "previous_summary",
        "compression_count",
        "compaction_cooldown_until",
        "title",
        "model",
    }
)
"""The session columns :meth:`SessionQueries.update_session` may change."""

DEFAULT_SESSION_LIST_LIMIT = 100

sessions_table = cast(Table, SessionRow.__table__)


class SessionQueries(RepositoryBase):
    """Finding, starting and updating sessions."""

    async def get_or_create_session(
        self,
        key: str,
        *,
        platform: str,
        chat_id: str,
        user_id: str | None = None,
        engine: str = DEFAULT_ENGINE,
    ) -> SessionRecord:
        """The active session for ``key``, created if the key has none yet."""
        found = await self._find_active(key)
        if found is not None:
            return found

        def find_or_insert(connection: Connection) -> SessionRecord:
            found = connection.execute(_active_session(key)).first()
            if found is None:
                found = _insert_active_session(connection, key, platform, chat_id, user_id, engine)
            return session_record(found)

        try:
            return await self._write(find_or_insert)
        except IntegrityError:
            # Another process created it between our read and our insert: use theirs.
            theirs = await self._find_active(key)
            if theirs is None:
                raise
            return theirs

    async def _find_active(self, key: str) -> SessionRecord | None:
        async with self._reading() as session:
            row = (await session.execute(_active_session(key))).first()
        return session_record(row) if row is not None else None

    async def start_new_session(
        self,
        key: str,
        *,
        platform: str,
        chat_id: str,
        user_id: str | None = None,
        engine: str = DEFAULT_ENGINE,
    ) -> SessionRecord:
        """Start a fresh active session for ``key`` (``/new``); the old one is kept, inactive."""

        def replace_active(connection: Connection) -> SessionRecord:
            connection.execute(
                update(SessionRow)
                .where(SessionRow.key == key, SessionRow.active == true())
                .values(active=False, updated_at=utcnow())
            )
            row = _insert_active_session(connection, key, platform, chat_id, user_id, engine)
            return session_record(row)

        return await self._write(replace_active)

    async def get_session(self, session_id: int) -> SessionRecord | None:
        """The session with this id, or None."""
        async with self._reading() as session:
            row = await session.get(SessionRow, session_id)
            return session_record(row) if row is not None else None

    async def list_sessions(
        self, *, limit: int | None = DEFAULT_SESSION_LIST_LIMIT, key: str | None = None
    ) -> list[SessionSummary]:
        """Sessions, most recently updated first, each with its number of stored messages
        (``limit`` None: all of them)."""
        message_count = (
            select(func.count(MessageRow.id))
            .where(MessageRow.session_id == SessionRow.id)
            .scalar_subquery()
        )
        query = select(SessionRow, message_count).order_by(
            SessionRow.updated_at.desc(), SessionRow.id.desc()
        )
        if key is not None:
            query = query.where(SessionRow.key == key)
        async with self._reading() as session:
            result = await session.execute(query.limit(limit))
            return [_session_summary(row, count) for row, count in result]

    async def update_session(self, session_id: int, **fields: Any) -> None:
        """Change some of :data:`UPDATABLE_SESSION_FIELDS` on a session.

        Raises ValueError for any other field and NotFoundError for an unknown session.
        """
        unknown = set(fields) - UPDATABLE_SESSION_FIELDS
        if unknown:
            raise ValueError(
                f"cannot update session field(s) {sorted(unknown)}; "
                f"allowed: {sorted(UPDATABLE_SESSION_FIELDS)}"
            )
        if fields.get("engine_state", {}) is None:
            raise ValueError("engine_state must be a dict, not None")
        cooldown = fields.get("compaction_cooldown_until")
        if cooldown is not None and cooldown.tzinfo is None:
            raise ValueError("compaction_cooldown_until must be timezone-aware (naive given)")
        await self._write(lambda connection: touch_session(connection, session_id, **fields))


def _active_session(key: str) -> Select[Any]:
    return select(sessions_table).where(SessionRow.key == key, SessionRow.active == true())


def _insert_active_session(
    connection: Connection,
    key: str,
    platform: str,
    chat_id: str,
    user_id: str | None,
    engine: str,
) -> Row[Any]:
    now = utcnow()
    values: dict[str, Any] = dict(
        key=key,
        platform=platform,
        chat_id=chat_id,
        user_id=user_id,
        title=None,
        active=True,
        engine=engine,
        engine_state={},
        previous_summary=None,
        compression_count=0,
        last_prompt_tokens=None,
        compaction_cooldown_until=None,
        created_at=now,
        updated_at=now,
    )
    return connection.execute(
        insert(sessions_table).values(values).returning(*sessions_table.c)
    ).one()


def session_record(row: SessionRow | Row[Any]) -> SessionRecord:
    """The immutable view of a session row."""
    return SessionRecord(
        id=row.id,
        key=row.key,
        platform=row.platform,
        chat_id=row.chat_id,
        user_id=row.user_id,
        title=row.title,
        active=row.active,
        engine=row.engine,
        engine_state=dict(row.engine_state or {}),
        previous_summary=row.previous_summary,
        compression_count=row.compression_count,
        last_prompt_tokens=row.last_prompt_tokens,
        compaction_cooldown_until=row.compaction_cooldown_until,
        created_at=row.created_at,
        updated_at=row.updated_at,
        model=row.model,
    )


def _session_summary(row: SessionRow, message_count: int) -> SessionSummary:
    return SessionSummary(
        id=row.id,
        key=row.key,
        platform=row.platform,
        active=row.active,
        created_at=row.created_at,
        updated_at=row.updated_at,
        message_count=message_count,
        title=row.title,
    )
