"""Voice replies: each chat's ``/voice`` mode, and the characters spoken per answer.

A chat's mode is one row per (platform, chat), replaced by ``/voice``; a chat without one uses
the configured default. Every spoken answer adds a row of characters and cost under the user
whose turn it answered: summed per day for the cap, per provider for ``/usage`` and the
operators' pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, delete, func, insert, select, update

from gateway.store.repository_base import RepositoryBase, rowcount
from gateway.store.tables import ChatVoiceRow, ReplyPartRow, SpeechUsageRow, utcnow

speech_usage_table = cast(Table, SpeechUsageRow.__table__)


@dataclass(frozen=True, slots=True)
class SpeechTotal:
    """The answers one provider spoke since a point in time (for one user, or everyone)."""

    provider: str
    answers: int
    chars: int
    cost_usd: float


class VoiceQueries(RepositoryBase):
    """Chat voice modes and spoken characters."""

    async def voice_mode(self, platform: str, chat_id: str) -> str | None:
        """The chat's stored ``/voice`` mode, None when it never set one."""
        query = select(ChatVoiceRow.mode).where(
            ChatVoiceRow.platform == platform, ChatVoiceRow.chat_id == chat_id
        )
        async with self._reading() as session:
            return (await session.execute(query)).scalar_one_or_none()

    async def set_voice_mode(self, platform: str, chat_id: str, mode: str) -> None:
        """Store the chat's mode (replacing the one it had)."""
        now = utcnow()

        def store(connection: Connection) -> None:
            changed = connection.execute(
                update(ChatVoiceRow)
                .where(ChatVoiceRow.platform == platform, ChatVoiceRow.chat_id == chat_id)
                .values(mode=mode, updated_at=now)
            )
            if rowcount(changed) == 0:
                connection.execute(
                    insert(ChatVoiceRow).values(
                        platform=platform, chat_id=chat_id, mode=mode, updated_at=now
                    )
                )

        await self._write(store)

    async def record_speech(
        self,
        *,
        user_key: str | None,
        session_key: str,
        provider: str,
        chars: int,
        cost_usd: float,
    ) -> None:
        """Add one spoken answer's characters and cost."""
        row = {
            "user_key": user_key,
            "session_key": session_key,
            "provider": provider,
            "chars": chars,
            "cost_usd": cost_usd,
            "created_at": utcnow(),
        }

        def add(connection: Connection) -> None:
            connection.execute(insert(speech_usage_table).values(row))

        await self._write(add)

    async def spoken_chars_since(self, user_key: str, since: datetime) -> int:
        """Characters spoken for ``user_key`` since ``since`` (the daily cap)."""
        query = select(func.coalesce(func.sum(SpeechUsageRow.chars), 0)).where(
            SpeechUsageRow.user_key == user_key, SpeechUsageRow.created_at >= since
        )
        async with self._reading() as session:
            return int((await session.execute(query)).scalar_one())

    async def speech_totals(
        self, since: datetime, user_key: str | None = None
    ) -> list[SpeechTotal]:
        """Per provider: answers, characters and cost since ``since`` (of ``user_key``, else
        of everyone), the provider with the most characters first."""
        chars = func.sum(SpeechUsageRow.chars)
        query = (
            select(
                SpeechUsageRow.provider,
                func.count(),
                chars,
                func.sum(SpeechUsageRow.cost_usd),
            )
            .where(SpeechUsageRow.created_at >= since)
            .group_by(SpeechUsageRow.provider)
            .order_by(chars.desc())
        )
        if user_key is not None:
            query = query.where(SpeechUsageRow.user_key == user_key)
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        return [
            SpeechTotal(str(provider), int(answers), int(total), float(cost or 0.0))
            for provider, answers, total, cost in rows
        ]


def _voice_blobs(voices: Iterable[dict[str, Any] | None]) -> set[str]:
    return {str(voice["blob"]) for voice in voices if voice and voice.get("blob")}


def forget_speech(connection: Connection, user_key: str, reply_ids: Sequence[int]) -> set[str]:
    """``/forget``: delete the user's spoken-character rows; returns the audio blobs of the
    voice parts of ``reply_ids`` (deleted with those replies)."""
    connection.execute(delete(SpeechUsageRow).where(SpeechUsageRow.user_key == user_key))
    query = select(ReplyPartRow.voice).where(ReplyPartRow.reply_id.in_(reply_ids))
    return _voice_blobs(connection.execute(query).scalars())


def voice_blobs_in_use(connection: Connection, blobs: set[str]) -> set[str]:
    """Which of ``blobs`` a remaining voice part still plays (the same audio in another chat)."""
    if not blobs:
        return set()
    query = select(ReplyPartRow.voice).where(ReplyPartRow.voice.is_not(None))
    return _voice_blobs(connection.execute(query).scalars()) & blobs
