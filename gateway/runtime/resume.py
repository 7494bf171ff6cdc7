"""How a batch holding messages the last run left unfinished is taken up again.

A crash can stop a turn at three points, each recorded on every inbound message of the turn:
after its user message was stored (``user_message_id``: run the turn on, without storing the
text again), after its reply was planned (``reply_id``: send the parts still missing, no model
call), or before either (nothing to recognise: a new turn). A restarted worker's batch may
mix these, and new messages; :func:`resume_steps` sorts it into steps, oldest first.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.messages.failures import failure_summary
from gateway.messages.inbound import InboundMessage
from gateway.store.ports import LifecycleStore
from gateway.store.records import UNFINISHED_INBOUND_STATUSES, InboundRecord

log = logging.getLogger(__name__)

StepKind = Literal["new_turn", "resume_turn", "send_reply"]


@dataclass(slots=True)
class ResumeStep:
    """Messages handled together: a new turn, a turn resumed, or a planned reply sent on."""

    kind: StepKind
    messages: list[InboundMessage] = field(default_factory=list)
    user_message_id: int | None = None
    reply_id: int | None = None


def resume_steps(
    batch: Sequence[InboundMessage], records: Mapping[str, InboundRecord]
) -> list[ResumeStep]:
    """The steps for ``batch`` given the inbound records of its messages (by platform id).

    Messages of one interrupted turn form one step whatever else the batch holds; messages
    already finished are left out; the rest form one new turn. Steps keep the order of their
    first message.
    """
    steps: dict[tuple[StepKind, int | None], ResumeStep] = {}
    for message in batch:
        record = records.get(message.platform_message_id)
        if record is not None and record.status not in UNFINISHED_INBOUND_STATUSES:
            continue
        if record is not None and record.reply_id is not None:
            key: tuple[StepKind, int | None] = ("send_reply", record.reply_id)
        elif record is not None and record.user_message_id is not None:
            key = ("resume_turn", record.user_message_id)
        else:
            key = ("new_turn", None)
        step = steps.get(key)
        if step is None:
            step = steps[key] = ResumeStep(key[0])
            if key[0] == "send_reply":
                step.reply_id = key[1]
            elif key[0] == "resume_turn":
                step.user_message_id = key[1]
        step.messages.append(message)
    return list(steps.values())


def stored_message(payload: dict[str, Any] | None) -> InboundMessage | None:
    """The message an inbound record kept, None when it kept none or one that no longer
    reads (a payload from an incompatible version)."""
    if not payload:
        return None
    try:
        return InboundMessage.from_payload(payload)
    except (KeyError, TypeError, ValueError) as exc:
        log.error("a pending message could not be read back: %s", failure_summary(exc))
        return None


async def pending_messages(repo: LifecycleStore, platform: str) -> list[InboundMessage]:
    """What the last run left unanswered on ``platform``, to dispatch again. A message whose
    reply was sent before the crash (only the final mark was missing) is closed ``done``, one
    kept unreadable ``failed``: neither is dispatched."""
    messages: list[InboundMessage] = []
    for record in await repo.pending_inbound(platform):
        if record.reply_id is None and record.reply_platform_ids:
            # Answered before the crash, only the final mark was missing: never resend.
            await repo.mark_inbound(platform, record.platform_message_id, "done")
            continue
        message = stored_message(record.payload)
        if message is None:  # nothing (readable) kept to answer from
            await repo.mark_inbound(platform, record.platform_message_id, "failed")
            continue
        messages.append(message)
    return messages
