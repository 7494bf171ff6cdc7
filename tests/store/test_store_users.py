"""Run-time access, spend per user and forgetting a user, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from agent.types import Usage
from gateway.store.repository import Repository
from gateway.store.tables import utcnow


async def test_a_new_decision_replaces_the_old_one_per_id_or_username(
    any_repo: Repository,
) -> None:
    await any_repo.set_access("telegram", user_id="7", access="allow", set_by="telegram:1")
    await any_repo.set_access("telegram", username="@Dave", access="allow", set_by="cli")
    await any_repo.set_access("telegram", user_id="7", access="deny", set_by="telegram:1")
    await any_repo.set_access("discord", user_id="7", access="allow", set_by="cli")
    records = await any_repo.access_records("telegram")
    assert [(r.user_id, r.username, r.access) for r in records] == [
        (None, "dave", "allow"),
        ("7", None, "deny"),
    ]
    assert len(await any_repo.access_records()) == 3


async def _usage(repo: Repository, session_id: int | None, user: str | None, cost: float) -> None:
    usage = Usage(input_tokens=100, output_tokens=10, cache_read_tokens=300, model="m1")
    await repo.record_usage(session_id, usage, provider="p", cost_usd=cost, user_key=user)


async def test_spend_is_summed_per_user_and_for_everyone(any_repo: Repository) -> None:
    session = await any_repo.get_or_create_session("telegram:7", platform="telegram", chat_id="7")
    await _usage(any_repo, session.id, "telegram:7", 0.25)
    await _usage(any_repo, session.id, "telegram:7", 0.5)
    await _usage(any_repo, None, "telegram:8", 1.0)
    since = utcnow() - timedelta(hours=1)
    assert await any_repo.spend_since(since, "telegram:7") == 0.75
    assert await any_repo.spend_since(since) == 1.75
    assert await any_repo.spend_since(utcnow() + timedelta(hours=1)) == 0.0
    by_user = {row.group: row for row in await any_repo.usage_by("user", since)}
    assert by_user["telegram:7"].calls == 2
    assert by_user["telegram:7"].cache_hit_rate == 0.75
    [day] = await any_repo.usage_by("day", since)
    assert day.group == f"{utcnow():%Y-%m-%d}" and day.calls == 3
    assert [row.group for row in await any_repo.usage_by("model", since, "telegram:8")] == ["m1"]


async def test_forgetting_a_user_keeps_shared_and_other_sessions(any_repo: Repository) -> None:
    own = await any_repo.get_or_create_session(
        "telegram:7", platform="telegram", chat_id="7", user_id="7"
    )
    shared = await any_repo.get_or_create_session(
        "telegram:-100", platform="telegram", chat_id="-100", user_id="7"
    )
    other = await any_repo.get_or_create_session(
        "telegram:8", platform="telegram", chat_id="8", user_id="8"
    )
    for session, text in ((own, "mine"), (shared, "ours"), (other, "theirs")):
        await any_repo.append_messages(session.id, [{"role": "user", "content": text}], [2])
    for n, (key, user) in enumerate(
        [("telegram:7", "7"), ("telegram:-100", "7"), ("telegram:-100", "8"), ("telegram:8", "8")]
    ):
        await any_repo.record_inbound(
            "telegram", f"m{n}", session_key=key, chat_id=key, user_id=user, text="t"
        )
        await any_repo.mark_inbound("telegram", f"m{n}", "done")
    await _usage(any_repo, own.id, "telegram:7", 0.1)
    await _usage(any_repo, shared.id, "telegram:7", 0.1)
    await _usage(any_repo, other.id, "telegram:8", 0.1)

    owned = await any_repo.owned_data("telegram", "7")
    assert owned.session_ids == [own.id] and owned.engines == ["compressor"]
    report = await any_repo.forget_user("telegram", "7", owned)
    assert (report.sessions, report.messages, report.usage_rows, report.inbound) == (1, 1, 2, 2)
    assert await any_repo.get_session(own.id) is None
    assert await any_repo.get_session(shared.id) is not None
    assert [m.content for m in await any_repo.all_messages(other.id)] == ["theirs"]
    assert await any_repo.spend_since(utcnow() - timedelta(hours=1)) == 0.1
