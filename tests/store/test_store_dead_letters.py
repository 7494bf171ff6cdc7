"""Quarantined updates are kept raw, whatever they contain, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json

from sqlalchemy import select

from gateway.quarantine import DeadLetter
from gateway.store import Repository
from gateway.store.tables import DeadLetterRow

POISON = {"update_id": 500000007, "message": {"text": "bad \ud800 and \x00 inside", "chat": None}}


async def kept_letters(repo: Repository) -> list[DeadLetterRow]:
    async with repo.store.sessionmaker() as session:
        return list((await session.scalars(select(DeadLetterRow))).all())


async def test_an_update_no_database_could_store_as_text_is_kept_raw_and_counted(
    any_repo: Repository,
) -> None:
    letter = DeadLetter(
        "telegram", "message without chat", POISON, "500000007", detail="bad \ud800 \x00"
    )
    assert await any_repo.add_dead_letter(letter)
    assert not await any_repo.add_dead_letter(letter)  # the same update again: kept once
    await any_repo.add_dead_letter(DeadLetter("discord", "not recorded", {"id": 1}, "1"))
    rows = await kept_letters(any_repo)
    counts = (
        await any_repo.count_dead_letters(),
        await any_repo.count_dead_letters("telegram"),
        await any_repo.count_dead_letters("slack"),
    )
    assert counts == (2, 1, 0)
    telegram = next(row for row in rows if row.platform == "telegram")
    assert json.loads(telegram.raw) == POISON
    assert (telegram.ref, telegram.reason) == ("500000007", "message without chat")
    assert "\\ud800" in telegram.detail and "\x00" not in telegram.detail
