"""Replies planned part by part: every answered message tied to its reply, closed with the last
part, failed with a reason; user messages tied to the inbound messages they were merged from."""

from __future__ import annotations

import pytest

from gateway.store.records import InboundLink
from gateway.store.repository import NotFoundError, Repository


async def record(repo: Repository, message_id: str, text: str = "hello") -> None:
    await repo.record_inbound(
        "telegram", message_id, session_key="telegram:42", chat_id="42", user_id="42", text=text
    )


async def test_a_planned_reply_ties_every_message_and_keeps_its_parts_in_order(
    repo: Repository,
) -> None:
    for message_id in ("1", "2"):
        await record(repo, message_id)

    planned = await repo.plan_reply(
        "telegram", ["1", "2"], ["part one", "part two"], session_key="telegram:42", chat_id="42"
    )

    stored = await repo.get_reply(planned.id)
    inbound = await repo.inbound_records("telegram", ["1", "2"])
    assert stored == planned
    assert [(p.index, p.text, p.sent) for p in stored.parts] == [
        (0, "part one", False),
        (1, "part two", False),
    ]
    assert [(r.status, r.reply_id) for r in inbound.values()] == [("processing", planned.id)] * 2


async def test_the_last_part_closes_every_message_of_the_reply_in_one_commit(
    repo: Repository,
) -> None:
    for message_id in ("1", "2", "3"):
        await record(repo, message_id)
    reply = await repo.plan_reply(
        "telegram", ["1", "2"], ["a", "b"], session_key="telegram:42", chat_id="42"
    )

    await repo.record_sent_part(reply.id, 0, "900")
    halfway = await repo.inbound_records("telegram", ["1", "2"])
    await repo.record_sent_part(reply.id, 1, "901", last=True)

    done = await repo.inbound_records("telegram", ["1", "2", "3"])
    stored = await repo.get_reply(reply.id)
    assert [r.status for r in halfway.values()] == ["processing", "processing"]
    assert stored is not None and stored.status == "sent" and stored.unsent == ()
    assert [p.platform_message_id for p in stored.parts] == ["900", "901"]
    assert [(done[i].status, done[i].reply_platform_ids) for i in ("1", "2", "3")] == [
        ("done", ()),
        ("done", ("900", "901")),
        ("pending", ()),
    ]


async def test_a_failed_turns_notice_closes_its_messages_failed_with_the_reason(
    repo: Repository,
) -> None:
    await record(repo, "1")
    reply = await repo.plan_reply(
        "telegram",
        ["1"],
        ["Sorry"],
        session_key="telegram:42",
        chat_id="42",
        closes_as="failed",
        failure="turn failed: RuntimeError",
    )
    await repo.record_sent_part(reply.id, 0, "900", last=True)

    closed = await repo.get_inbound("telegram", "1")
    assert closed is not None
    assert (closed.status, closed.failure) == ("failed", "turn failed: RuntimeError")


async def test_an_undeliverable_reply_fails_with_its_messages_and_the_reason(
    repo: Repository,
) -> None:
    for message_id in ("1", "2"):
        await record(repo, message_id)
    reply = await repo.plan_reply(
        "telegram", ["1", "2"], ["a", "b"], session_key="telegram:42", chat_id="42"
    )
    await repo.record_sent_part(reply.id, 0, "900")

    await repo.fail_reply(reply.id, "Forbidden: bot was blocked by the user")

    stored = await repo.get_reply(reply.id)
    inbound = await repo.inbound_records("telegram", ["1", "2"])
    assert stored is not None and stored.status == "failed"
    assert stored.failure == "Forbidden: bot was blocked by the user"
    assert {(r.status, r.failure) for r in inbound.values()} == {
        ("failed", "Forbidden: bot was blocked by the user")
    }


async def test_planning_a_reply_for_an_unrecorded_message_stores_nothing(
    repo: Repository,
) -> None:
    await record(repo, "1")

    with pytest.raises(NotFoundError):
        await repo.plan_reply(
            "telegram", ["1", "missing"], ["a"], session_key="telegram:42", chat_id="42"
        )

    untouched = await repo.get_inbound("telegram", "1")
    assert untouched is not None and (untouched.status, untouched.reply_id) == ("pending", None)
    with pytest.raises(ValueError, match="at least one part"):
        await repo.plan_reply("telegram", ["1"], [], session_key="telegram:42", chat_id="42")


async def test_a_stored_user_message_is_tied_to_every_message_it_was_merged_from(
    repo: Repository,
) -> None:
    for message_id in ("1", "2", "3"):
        await record(repo, message_id)
    session = await repo.get_or_create_session("telegram:42", platform="telegram", chat_id="42")

    [system_id] = await repo.append_messages(
        session.id, [{"role": "system", "content": "be brief"}], [3]
    )
    [user_id] = await repo.append_messages(
        session.id,
        [{"role": "user", "content": "one\n\ntwo"}],
        [4],
        platform_message_id="2",
        answers=InboundLink("telegram", ("1", "2")),
    )

    inbound = await repo.inbound_records("telegram", ["1", "2", "3"])
    assert system_id != user_id
    assert [(inbound[i].status, inbound[i].user_message_id) for i in ("1", "2", "3")] == [
        ("processing", user_id),
        ("processing", user_id),
        ("pending", None),
    ]
