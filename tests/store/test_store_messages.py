"""Messages: stored exactly as given, appended in order, never lost to concurrent writers."""

from __future__ import annotations

import asyncio

from gateway.store.db import Store, open_store
from gateway.store.repository import Repository

WRITERS = 20
TURNS = 3
TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "calculator", "arguments": '{"expression": "1800 / 7"}'},
}


async def new_session_id(repo: Repository, key: str = "telegram:42") -> int:
    session = await repo.get_or_create_session(key, platform="telegram", chat_id="42")
    return session.id


async def test_messages_round_trip_with_tool_calls_unicode_list_and_none_content(
    repo: Repository,
) -> None:
    session_id = await new_session_id(repo)
    messages = [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": "Grüße aus Köln 🌍 — 東京 ‏שלום‏", "name": "alice"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "257.14"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "ein Bild 📷"},
                {"type": "image", "source": {"data": [1, [2, [3, "drei"]]]}},
            ],
        },
    ]

    ids = await repo.append_messages(session_id, messages, [5, 12, 20, 3, 9])
    loaded = await repo.load_context(session_id)

    assert [{k: v for k, v in m.items() if not k.startswith("_")} for m in loaded] == [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": "Grüße aus Köln 🌍 — 東京 ‏שלום‏", "name": "alice"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "257.14"},
        messages[4],
    ]
    assert [m["_id"] for m in loaded] == ids
    assert [m["_tokens"] for m in loaded] == [5, 12, 20, 3, 9]


async def test_bookkeeping_keys_are_not_stored(repo: Repository) -> None:
    session_id = await new_session_id(repo)

    await repo.append_messages(
        session_id, [{"role": "user", "content": "hi", "_id": 999, "_scratch": "x"}], [1]
    )

    (record,) = await repo.all_messages(session_id)
    assert record.extra is None
    assert record.as_message() == {"role": "user", "content": "hi", "_id": record.id, "_tokens": 1}


async def test_appends_continue_the_context_in_order(repo: Repository) -> None:
    session_id = await new_session_id(repo)

    first = await repo.append_messages(
        session_id,
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}],
        [1, 1],
    )
    second = await repo.append_messages(session_id, [{"role": "user", "content": "three"}], [1])

    records = await repo.all_messages(session_id)
    assert first + second == [r.id for r in records]
    assert first[0] < first[1] < second[0]
    assert [(r.content, r.ctx_pos, r.in_context, r.kind) for r in records] == [
        ("one", 0, True, "message"),
        ("two", 1, True, "message"),
        ("three", 2, True, "message"),
    ]
    assert [m["content"] for m in await repo.load_context(session_id)] == ["one", "two", "three"]
    assert await repo.count_messages(session_id) == 3


async def test_sessions_keep_their_messages_apart(repo: Repository) -> None:
    alice = await new_session_id(repo, "telegram:1")
    bob = await new_session_id(repo, "telegram:2")

    await repo.append_messages(alice, [{"role": "user", "content": "from alice"}], [1])
    await repo.append_messages(bob, [{"role": "user", "content": "from bob"}], [1])

    assert [m["content"] for m in await repo.load_context(alice)] == ["from alice"]
    assert [m["content"] for m in await repo.load_context(bob)] == ["from bob"]
    assert (await repo.all_messages(bob))[0].ctx_pos == 0


async def test_platform_message_id_is_recorded_at_append_and_later(repo: Repository) -> None:
    session_id = await new_session_id(repo)

    (user_id,) = await repo.append_messages(
        session_id, [{"role": "user", "content": "hi"}], [1], platform_message_id="tg-100"
    )
    (reply_id,) = await repo.append_messages(
        session_id, [{"role": "assistant", "content": "yo"}], [1]
    )
    await repo.set_platform_message_id(reply_id, "tg-101")

    records = {r.id: r for r in await repo.all_messages(session_id)}
    assert records[user_id].platform_message_id == "tg-100"
    assert records[reply_id].platform_message_id == "tg-101"


async def test_platform_time_is_stored_and_comes_back_with_the_context(repo: Repository) -> None:
    session_id = await new_session_id(repo)
    sent_at = 1_764_000_000.5

    (user_id,) = await repo.append_messages(
        session_id, [{"role": "user", "content": "hi", "_sent_at": sent_at}], [1]
    )
    await repo.append_messages(session_id, [{"role": "assistant", "content": "yo"}], [1])

    records = await repo.all_messages(session_id)
    assert [(r.id == user_id, r.sent_at) for r in records] == [(True, sent_at), (False, None)]
    user, reply = await repo.load_context(session_id)
    assert user["_sent_at"] == sent_at
    assert "_sent_at" not in reply
    assert records[0].extra is None


async def test_ten_thousand_messages_append_in_one_call(repo: Repository) -> None:
    session_id = await new_session_id(repo)
    messages = [{"role": "user", "content": f"message {i} ✓"} for i in range(10_000)]

    ids = await repo.append_messages(session_id, messages, list(range(10_000)))

    assert len(ids) == 10_000
    assert ids == sorted(ids)
    context = await repo.load_context(session_id)
    assert [m["_id"] for m in context] == ids
    assert context[9_999] == {
        "role": "user",
        "content": "message 9999 ✓",
        "_id": ids[-1],
        "_tokens": 9_999,
    }


async def test_twenty_concurrent_writers_all_succeed(repo: Repository) -> None:
    shared = await new_session_id(repo, "discord:shared")

    async def writer(n: int) -> None:
        own = await new_session_id(repo, f"discord:{n}")
        for turn in range(TURNS):
            await repo.append_messages(own, [{"role": "user", "content": f"{n}-{turn}"}], [1])
            await repo.append_messages(shared, [{"role": "user", "content": f"{n}-{turn}"}], [1])
            await repo.load_context(own)

    await asyncio.gather(*(writer(n) for n in range(WRITERS)))

    shared_context = await repo.load_context(shared)
    assert len(shared_context) == WRITERS * TURNS
    assert sorted(m["content"] for m in shared_context) == sorted(
        f"{n}-{turn}" for n in range(WRITERS) for turn in range(TURNS)
    )
    positions = [r.ctx_pos for r in await repo.all_messages(shared)]
    assert positions == list(range(WRITERS * TURNS))


async def test_two_stores_on_one_file_write_concurrently(store: Store, db_url: str) -> None:
    # Two processes (the daemon and `hermes chat`) share the file; busy_timeout serialises them.
    other_store = await open_store(db_url)
    repos = [Repository(store), Repository(other_store)]

    async def writer(n: int) -> None:
        repo = repos[n % 2]
        own = await new_session_id(repo, f"cli:{n}")
        for turn in range(TURNS):
            await repo.append_messages(own, [{"role": "user", "content": str(turn)}], [1])

    try:
        await asyncio.gather(*(writer(n) for n in range(WRITERS)))
        summaries = await repos[0].list_sessions(limit=2 * WRITERS)
    finally:
        await other_store.close()

    assert len(summaries) == WRITERS
    assert {s.message_count for s in summaries} == {TURNS}
