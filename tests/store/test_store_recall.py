"""Recall over earlier sessions, on SQLite and PostgreSQL: a person finds what was said in the
chats they wrote in, never in another person's chat; a group finds only its own sessions."""

from __future__ import annotations

from agent.memory import MemoryOwner
from agent.tools import ToolRegistry
from agent.tools.recall_tool import recall_tool
from gateway.store.repository import Repository

ALICE = MemoryOwner("user", "telegram", "7")
BOB = MemoryOwner("user", "telegram", "8")
CAROL = MemoryOwner("user", "telegram", "9")
GROUP = MemoryOwner("chat", "telegram", "-100")


async def _said(repo: Repository, chat_id: str, user_id: str, texts: list[str], n: int) -> int:
    """A session of ``chat_id`` (a fresh one, as after /new) where ``user_id`` wrote ``texts``
    (each answered by the bot), with the inbound records the platform left."""
    session = await repo.start_new_session(
        f"telegram:{chat_id}", platform="telegram", chat_id=chat_id, user_id=user_id
    )
    for offset, text in enumerate(texts):
        await repo.record_inbound(
            "telegram",
            f"{chat_id}-{n}-{offset}",
            session_key=f"telegram:{chat_id}",
            chat_id=chat_id,
            user_id=user_id,
            text=text,
        )
        messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
        await repo.append_messages(session.id, messages, [5, 2])
    return session.id


async def test_a_user_recalls_an_earlier_session_of_theirs_and_nothing_of_another_users(
    any_repo: Repository,
) -> None:
    old = await _said(any_repo, "7", "7", ["My sister Ingrid lives in Tromsø"], 1)
    current = await _said(any_repo, "7", "7", ["What's the weather like?"], 2)
    await _said(any_repo, "8", "8", ["My sister Ingrid is a pilot"], 3)

    alice = await any_repo.recall_messages(ALICE, "Ingrid", 5)
    bob = await any_repo.recall_messages(BOB, "sister Ingrid", 5)
    carol = await any_repo.recall_messages(CAROL, "Ingrid", 5)
    in_context = await any_repo.recall_messages(ALICE, "Ingrid", 5, current_session=old)

    assert [(h.session_id, h.role, h.text) for h in alice] == [
        (old, "user", "My sister Ingrid lives in Tromsø")
    ]
    assert alice[0].session_id != current
    assert alice[0].created_at.tzinfo is not None and alice[0].session_started_at is not None
    assert [h.text for h in bob] == ["My sister Ingrid is a pilot"]
    assert carol == []
    assert in_context == []  # the model has that session's context already


async def test_group_messages_are_recalled_by_its_members_and_by_the_group_only(
    any_repo: Repository,
) -> None:
    group = await _said(any_repo, "-100", "7", ["The offsite is in Porto"], 1)
    await _said(any_repo, "-100", "9", ["Porto in May then"], 2)
    await _said(any_repo, "7", "7", ["Keep my Porto hotel booking private"], 3)

    alice = await any_repo.recall_messages(ALICE, "Porto", 10)
    carol = await any_repo.recall_messages(CAROL, "Porto", 10)
    bob = await any_repo.recall_messages(BOB, "Porto", 10)
    in_group = await any_repo.recall_messages(GROUP, "Porto", 10)

    assert sorted(h.text for h in alice) == [
        "Keep my Porto hotel booking private",
        "Porto in May then",
        "The offsite is in Porto",
    ]
    assert sorted(h.text for h in carol) == ["Porto in May then", "The offsite is in Porto"]
    assert bob == []  # never wrote in the group
    assert sorted(h.text for h in in_group) == ["Porto in May then", "The offsite is in Porto"]
    assert {h.session_id for h in in_group} >= {group}


async def test_only_what_was_said_is_quoted_not_a_tool_call_that_mentions_the_words(
    any_repo: Repository,
) -> None:
    session = await _said(any_repo, "7", "7", ["Where did I park the bike?"], 1)
    call = {
        "id": "call1",
        "type": "function",
        "function": {"name": "recall", "arguments": '{"query": "bike parking"}'},
    }
    looked = [
        {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call1", "content": "bike parking: nothing"},
    ]
    await any_repo.append_messages(session, looked, [5, 5])

    found = await any_repo.recall_messages(ALICE, "bike", 10)

    assert [(h.role, h.text) for h in found] == [("user", "Where did I park the bike?")]


async def test_the_recall_tool_answers_dated_snippets_with_their_session(
    any_repo: Repository,
) -> None:
    old = await _said(
        any_repo, "7", "7", ["word " * 100 + "my locker code is 4711 " + "x " * 100], 1
    )
    registry = ToolRegistry([recall_tool(any_repo, ALICE)])

    found = await registry.call("recall", {"query": "locker code"})
    nothing = await registry.call("recall", {"query": "submarine"})

    assert f"user (session {old}, started " in found
    assert "my locker code is 4711" in found and found.count("…") == 2
    assert found.startswith("[20") and " UTC] " in found
    assert nothing == "Nothing found for 'submarine' in earlier conversations."
