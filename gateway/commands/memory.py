"""``/memory``: show what the bot remembers (numbered), ``/memory remove N`` to delete one.

In a private chat it is the user's own memory; in a group chat the group's shared memory (see
:mod:`agent.memory`). A change shows in the system prompt from the next cold point on.
"""

from __future__ import annotations

from gateway.commands.registry import CommandContext, CommandSpec

OFF_TEXT = "Memory is off here."
EMPTY_TEXT = "I remember nothing yet. Ask me to remember something."
USAGE_TEXT = "Use /memory to list the entries, /memory remove N to delete entry N."
HEADINGS = {"user": "What I remember about you:", "chat": "What I remember for this group:"}


async def memory_command(ctx: CommandContext) -> str:
    """List the memory's entries, or remove one by its number."""
    owner = ctx.address.memory_owner
    services = ctx.sessions.services
    if owner is None or not services.config.memory.enabled:
        return OFF_TEXT
    entries = await services.repo.list_memories(owner)
    words = ctx.argument.split()
    if not words:
        if not entries:
            return EMPTY_TEXT
        lines = [f"{number}. {entry.text}" for number, entry in enumerate(entries, 1)]
        return "\n".join([HEADINGS[owner.scope], *lines])
    if len(words) != 2 or words[0].lower() != "remove" or not words[1].isdigit():
        return USAGE_TEXT
    number = int(words[1])
    if not 1 <= number <= len(entries):
        return f"There is no entry {number}; /memory lists them."
    entry = entries[number - 1]
    await services.repo.remove_memory(owner, entry.id)
    return f"Removed: {entry.text}"


MEMORY_COMMAND = CommandSpec(
    "memory",
    "What the bot remembers; remove N deletes an entry",
    memory_command,
    arguments="[remove N]",
)
