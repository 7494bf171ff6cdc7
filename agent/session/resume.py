"""Where a turn's user message stands in a session's context: new, or stored before a crash.

Pure functions over the context, so the session's turn reads as its steps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from agent.loop import missing_tool_results, unanswered_tool_calls
from agent.session.ports import TurnSource
from agent.session_context import TurnRecorder
from agent.types import Message, MessageBookkeeping, UserContent, note_stored_ids

log = logging.getLogger(__name__)

STOPPED_NOTE = "(The user stopped this answer with /stop before it was given.)"
"""The assistant note a stopped turn's unanswered message gets."""


def answered(source: TurnSource | None) -> TurnSource | None:
    """The platform messages a new user message answers (None when it came from none)."""
    return source if source is not None and source.platform_message_ids else None


def user_message(text: UserContent, source: TurnSource | None) -> Message:
    """The turn's user message, carrying the platform id of the last message it answers."""
    message: Message = {"role": "user", "content": text}
    link = answered(source)
    if link is not None:
        bookkeeping: MessageBookkeeping = {"_platform_message_id": link.platform_message_ids[-1]}
        message.update(bookkeeping)
    return message


def stored_position(
    context: Sequence[Message], source: TurnSource | None, session_id: int
) -> int | None:
    """Where in the context the turn's user message already is (stored before a crash).

    Known by the row the inbound messages point at; for messages recorded before they
    did, by the platform id on the newest user message.
    """
    if source is None:
        return None
    if source.stored_message_id is not None:
        for index in range(len(context) - 1, -1, -1):
            if context[index].get("_id") == source.stored_message_id:
                return index
        log.warning(
            "session %s: stored message %s of a resumed turn is no longer in context",
            session_id,
            source.stored_message_id,
        )
    for index in range(len(context) - 1, -1, -1):
        message = context[index]
        if message.get("role") == "user" and message.get("_kind") is None:
            stored_id = message.get("_platform_message_id")
            return index if stored_id in source.platform_message_ids else None
    return None


def undelivered_answer(context: Sequence[Message], stored_at: int) -> str | None:
    """The final answer stored after the resumed turn's message but never delivered (a
    crash between the two), or None when the turn must run on."""
    last = context[-1]
    was_answered = stored_at < len(context) - 1
    if was_answered and last.get("role") == "assistant" and not last.get("tool_calls"):
        return str(last.get("content") or "")
    return None


async def make_whole(
    context: list[Message],
    recorder: TurnRecorder,
    system_prompt: str,
    needs_approval: Callable[[str], bool],
) -> list[dict[str, Any]]:
    """Make a loaded context whole: a new session gets ``system_prompt``, and tool calls a
    crash left without results get stubs telling the model they never ran (both stored).
    Returns the calls among them that waited for the user's approval: the resumed turn asks
    again."""
    if not context:
        system: Message = {"role": "system", "content": system_prompt}
        note_stored_ids([system], await recorder.record_messages([system]))
        context.append(system)
    ask_again = [
        call
        for call in unanswered_tool_calls(context)
        if needs_approval(str(call.get("function", {}).get("name", "")))
    ]
    stubs = missing_tool_results(context)
    if stubs:
        note_stored_ids(stubs, await recorder.record_messages(stubs))
        context.extend(stubs)
    return ask_again
