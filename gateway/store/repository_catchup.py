"""Where to catch up from: the newest message recorded per chat of a platform.

A platform that does not redeliver what was sent while the daemon was down (Discord after a
fresh IDENTIFY) reads this at start and fetches each known chat's history after that message.
"""

from __future__ import annotations

from sqlalchemy import func, select

from gateway.store.repository_base import RepositoryBase
from gateway.store.tables import InboundRow


class CatchUpQueries(RepositoryBase):
    """Read-only queries for catching up on messages missed while the daemon was down."""

    async def newest_inbound_per_chat(self, platform: str) -> dict[str, str]:
        """The id of the newest message recorded from each chat of ``platform``, by chat id.

        Ids are compared as numbers (Discord snowflakes, stored as strings): a longer digit
        string is the larger number, equal lengths compare as text. The database groups by
        chat and id length, so only a handful of rows per chat leave it. Ids that are not
        plain digits are not message positions and are ignored.
        """
        id_length = func.length(InboundRow.platform_message_id)
        query = (
            select(InboundRow.chat_id, func.max(InboundRow.platform_message_id))
            .where(InboundRow.platform == platform)
            .group_by(InboundRow.chat_id, id_length)
        )
        async with self._reading() as session:
            rows = (await session.execute(query)).all()
        newest: dict[str, str] = {}
        for chat_id, message_id in rows:
            if not _is_position(message_id):
                continue
            current = newest.get(chat_id)
            if current is None or int(message_id) > int(current):
                newest[chat_id] = message_id
        return newest


def _is_position(message_id: str | None) -> bool:
    """Whether an id is a plain decimal number (a snowflake), comparable to its neighbours."""
    return message_id is not None and message_id.isascii() and message_id.isdigit()
