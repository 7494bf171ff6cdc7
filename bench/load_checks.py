"""What the load benchmark checks after a run: every message answered exactly once, in order.

Both sides are compared: what the simulated users received (from the load driver) and what the
gateway stored (inbound records with their reply ids, user messages per session).
"""

from __future__ import annotations

from bench.load_driver import BotMessage, reply_marker
from gateway.runtime.app import App
from gateway.store.records import MESSAGE_KIND

PLATFORM = "telegram"


def check_replies(
    sent: dict[int, list[BotMessage]], pushed: dict[int, list[int]], messages: int
) -> list[str]:
    """Every chat got exactly one reply per message, in order, each answering its message."""
    problems = []
    for chat_id in pushed:
        texts = [message.text for message in sent.get(chat_id, [])]
        if len(texts) != messages:
            problems.append(f"chat {chat_id}: {len(texts)} replies to {messages} messages")
        for index, text in enumerate(texts[:messages]):
            if reply_marker(chat_id, index) not in text:
                problems.append(f"chat {chat_id}: reply {index} does not answer it: {text[:60]!r}")
    return problems


async def check_store(
    app: App, sent: dict[int, list[BotMessage]], pushed: dict[int, list[int]], messages: int
) -> list[str]:
    """Every inbound record is done with its one reply; every user message stored once (a
    compaction's summary, stored in the user role, is not one)."""
    problems = []
    repo = app.repo
    for chat_id, message_ids in pushed.items():
        reply_ids = [str(message.message_id) for message in sent.get(chat_id, [])]
        for index, message_id in enumerate(message_ids):
            record = await repo.get_inbound(PLATFORM, f"{chat_id}:{message_id}")
            if record is None or record.status != "done":
                status = record.status if record else "missing"
                problems.append(f"chat {chat_id}: inbound {message_id} is {status}")
            elif list(record.reply_platform_ids) != reply_ids[index : index + 1]:
                problems.append(
                    f"chat {chat_id}: inbound {message_id} replies {record.reply_platform_ids}"
                )
    sessions = await repo.list_sessions(limit=len(pushed) + 1)
    if len(sessions) != len(pushed):
        problems.append(f"{len(sessions)} sessions stored for {len(pushed)} chats")
    for summary in sessions:
        chat_id = int(summary.key.removeprefix(f"{PLATFORM}:"))
        stored = await repo.all_messages(summary.id)
        sources = [
            m.platform_message_id for m in stored if m.role == "user" and m.kind == MESSAGE_KIND
        ]
        expected = [f"{chat_id}:{message_id}" for message_id in pushed.get(chat_id, [])]
        if sources != expected:
            problems.append(f"session {summary.key}: user messages stored from {sources}")
    return problems
