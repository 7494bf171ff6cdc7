"""Quarantined updates are kept raw, whatever they contain, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select

from gateway.messages.quarantine import DeadLetter
from gateway.store.repository import Repository
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


def telegram_update(update_id: int, sender: int, text: str) -> dict[str, object]:
    return {
        "update_id": update_id,
        "message": {"from": {"id": sender}, "chat": {"id": sender}, "text": text},
    }


async def test_forgetting_a_user_deletes_the_quarantined_updates_that_name_them(
    any_repo: Repository,
) -> None:
    theirs = telegram_update(1, 7, "my address is ...")
    quoted = telegram_update(2, 8, "replying")
    quoted["message"]["reply_to_message"] = {"from": {"id": 7}, "text": "what 7 wrote"}  # type: ignore[index]
    others = telegram_update(3, 8, "bob's own")
    for number, raw in enumerate((theirs, quoted, others), start=1):
        await any_repo.add_dead_letter(DeadLetter("telegram", "bad", raw, str(number)))
    await any_repo.add_dead_letter(DeadLetter("discord", "bad", {"author": {"id": "7"}}, "d"))
    await any_repo.add_dead_letter(DeadLetter("telegram", "bad", "not json \ud800", "4"))
    owned = await any_repo.owned_data("telegram", "7")
    report = await any_repo.forget_user("telegram", "7", owned)
    left = sorted((row.platform, row.ref) for row in await kept_letters(any_repo))
    assert report.quarantined == 2
    assert left == [("discord", "d"), ("telegram", "3"), ("telegram", "4")]


async def test_quarantined_updates_past_their_retention_are_pruned(any_repo: Repository) -> None:
    await any_repo.add_dead_letter(DeadLetter("telegram", "bad", {"update_id": 1}, "1"))
    [row] = await kept_letters(any_repo)
    assert await any_repo.prune_dead_letters(row.received_at) == 0  # kept: not older
    assert await any_repo.prune_dead_letters(row.received_at + timedelta(seconds=1)) == 1
    assert await any_repo.count_dead_letters() == 0
