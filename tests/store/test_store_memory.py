"""Memory entries per owner, on SQLite and PostgreSQL: nobody reaches another owner's entries."""

from __future__ import annotations

import pytest

from agent.memory import MemoryOwner
from agent.tools import ToolRegistry
from agent.tools.memory_tool import memory_tool
from gateway.store.repository import Repository
from gateway.store.repository_base import NotFoundError

ALICE = MemoryOwner("user", "telegram", "7")
BOB = MemoryOwner("user", "telegram", "8")
GROUP = MemoryOwner("chat", "telegram", "7")
"""A group chat whose id happens to equal Alice's user id: still another owner."""


async def test_entries_are_kept_per_owner_in_order(any_repo: Repository) -> None:
    first = await any_repo.add_memory(ALICE, "Alice lives in Lyon")
    await any_repo.add_memory(BOB, "Bob likes tea")
    await any_repo.add_memory(GROUP, "The group plays chess on Fridays")
    second = await any_repo.add_memory(ALICE, "Alice's cat is called Miso")
    assert [e.text for e in await any_repo.list_memories(ALICE)] == [
        "Alice lives in Lyon",
        "Alice's cat is called Miso",
    ]
    assert [e.id for e in await any_repo.list_memories(ALICE)] == [first.id, second.id]
    assert [e.text for e in await any_repo.list_memories(BOB)] == ["Bob likes tea"]
    assert [e.text for e in await any_repo.list_memories(GROUP)] == [
        "The group plays chess on Fridays"
    ]
    assert await any_repo.list_memories(MemoryOwner("user", "discord", "7")) == []


async def test_replace_and_remove_touch_only_the_owners_entry(any_repo: Repository) -> None:
    entry = await any_repo.add_memory(ALICE, "Alice lives in Lyon")
    changed = await any_repo.replace_memory(ALICE, entry.id, "Alice lives in Paris")
    assert changed.text == "Alice lives in Paris" and changed.created_at == entry.created_at
    with pytest.raises(NotFoundError):
        await any_repo.replace_memory(BOB, entry.id, "Bob took it over")
    with pytest.raises(NotFoundError):
        await any_repo.remove_memory(GROUP, entry.id)
    assert [e.text for e in await any_repo.list_memories(ALICE)] == ["Alice lives in Paris"]
    await any_repo.remove_memory(ALICE, entry.id)
    assert await any_repo.list_memories(ALICE) == []


async def test_the_memory_tool_refuses_an_entry_past_the_limit_with_a_clear_error(
    any_repo: Repository,
) -> None:
    tool = memory_tool(any_repo, ALICE, max_chars=40)
    registry = ToolRegistry([tool])
    added = await registry.call("memory", {"action": "add", "content": "Alice lives in Lyon"})
    full = await registry.call("memory", {"action": "add", "content": "x" * 30})
    replaced = await registry.call(
        "memory", {"action": "replace", "old_text": "Lyon", "content": "Alice lives in Paris"}
    )
    assert (
        added == 'Remembered: "Alice lives in Lyon" (memory: 1 entries, 19 of 40 characters used)'
    )
    assert full.startswith("Error: memory is full: 19 of 40 characters used")
    assert '"Alice lives in Paris"' in replaced
    assert [e.text for e in await any_repo.list_memories(ALICE)] == ["Alice lives in Paris"]
    assert await any_repo.list_memories(BOB) == []
