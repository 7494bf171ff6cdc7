"""What a user saw of live replies: every draft and every edit, with the time it landed.

Kept by the emulated Bot API (``sendMessageDraft``, ``editMessageText``) so a test can check
what the chat showed while a reply was being written, not only how it ended.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sandbox.telegram_chats import ChatDirectory
from sandbox.telegram_faults import FloodControl
from sandbox.telegram_wire import Params, bad_request, int_param

DRAFT_PEER_INVALID = "TEXTDRAFT_PEER_INVALID"
"""Telegram's answer to a draft for anything but a private chat."""


@dataclass(frozen=True, slots=True)
class LiveEvent:
    """One draft or edit as the chat showed it."""

    chat_id: int
    text: str
    at: float
    """``time.monotonic()`` when the emulator accepted it."""
    draft_id: int | None = None
    message_id: int | None = None
    parse_mode: str | None = None


@dataclass(slots=True)
class LiveRecord:
    """Drafts and edits per chat, oldest first."""

    drafts: list[LiveEvent] = field(default_factory=list)
    edits: list[LiveEvent] = field(default_factory=list)

    def drafts_in(self, chat_id: int) -> list[LiveEvent]:
        return [event for event in self.drafts if event.chat_id == chat_id]

    def edits_in(self, chat_id: int) -> list[LiveEvent]:
        return [event for event in self.edits if event.chat_id == chat_id]


def send_message_draft(
    params: Params,
    directory: ChatDirectory,
    flood: FloodControl | None,
    record: LiveRecord,
    parse: Any,
) -> bool:
    """``sendMessageDraft``: stream a partial message to a private chat (ephemeral; nothing
    is stored in the chat). ``parse`` checks the text as ``sendMessage`` does."""
    chat = directory.chat_for_sending(params.get("chat_id"))
    if chat["type"] != "private":
        raise bad_request(DRAFT_PEER_INVALID)
    draft_id = int_param(params, "draft_id")
    if not draft_id:
        raise bad_request("draft_id must be non-zero")
    text, _entities = parse(params)
    if flood is not None:
        flood.admit(chat["id"], False)
    record.drafts.append(
        LiveEvent(chat["id"], text, time.monotonic(), draft_id, None, params.get("parse_mode"))
    )
    return True
