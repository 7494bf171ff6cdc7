"""Approval prompts in the chat: the :class:`~agent.tools.approvals.ApprovalPort` the runner
hands each turn, and the desk that matches button presses to the prompts waiting for them.

A call to a tool in its server's ``ask`` list posts one prompt (a bot message, recorded right
after its send like a reply part) and waits for a press by the user whose message started the
turn or an admin; anyone else is refused on the button. No answer within the timeout counts as
deny. "Always in this chat" is stored, so the chat is not asked again, even after a restart.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from agent.tools.approvals import Decision, ToolCallPreview
from gateway.platforms.base import ApprovalPress, DeliveryTarget, PlatformAdapter
from gateway.store.ports import ApprovalStore

log = logging.getLogger(__name__)

NOT_OPEN_TEXT = "This request is no longer open."
NOT_YOURS_TEXT = "Only the person who asked, or an admin, can answer this."
OUTCOME_TEXT: Mapping[Decision, str] = {
    "once": "Allowed once.",
    "always": "Allowed in this chat from now on.",
    "deny": "Denied.",
    "timeout": "No answer in time: denied.",
}
STOPPED_TEXT = "Stopped before an answer."
STALE_TEXT = "No longer open: the bot restarted (it asks again if the call is still wanted)."
MayAnswer = Callable[[str, str | None], bool]
"""Whether (user id, username) may answer a prompt."""


@dataclass(slots=True)
class _Waiting:
    may_answer: MayAnswer
    answer: asyncio.Future[tuple[Decision, str]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class ApprovalDesk:
    """The prompts waiting for an answer in this process, and where presses arrive."""

    def __init__(
        self,
        store: ApprovalStore,
        adapters: Mapping[str, PlatformAdapter],
        timeout_seconds: Callable[[], float],
    ) -> None:
        self._store = store
        self._adapters = adapters
        self._timeout_seconds = timeout_seconds
        self._waiting: dict[str, _Waiting] = {}

    @property
    def waiting(self) -> int:
        """How many prompts wait for an answer now."""
        return len(self._waiting)

    async def on_press(self, press: ApprovalPress) -> str | None:
        """A button was pressed: None when the answer was taken, else a refusal to show."""
        waiting = self._waiting.get(press.approval_id)
        if waiting is None or waiting.answer.done():
            return NOT_OPEN_TEXT
        if not waiting.may_answer(press.user_id, press.username):
            log.info("%s: approval pressed by someone else; refused", press.platform)
            return NOT_YOURS_TEXT
        if press.choice not in OUTCOME_TEXT or press.choice == "timeout":
            return NOT_OPEN_TEXT
        choice: Decision = press.choice  # type: ignore[assignment]
        waiting.answer.set_result((choice, press.user_id))
        return None

    async def close_stale(self, platform: str, before: datetime) -> int:
        """Take the buttons off prompts a previous run left waiting (sent before
        ``before``); returns how many."""
        adapter = self._adapters[platform]
        stale = await self._store.open_approval_prompts(platform, before)
        for chat_id, message_id in stale:
            await self._close(adapter, DeliveryTarget(chat_id), message_id, STALE_TEXT)
            await self._store.record_approval_decision(platform, chat_id, message_id, "stale")
        return len(stale)

    def for_turn(
        self, platform: str, target: DeliveryTarget, may_answer: MayAnswer
    ) -> ChatApprovals:
        """The approval port of one turn in this chat."""
        return ChatApprovals(self, platform, target, may_answer)

    async def ask(
        self, platform: str, target: DeliveryTarget, call: ToolCallPreview, may_answer: MayAnswer
    ) -> Decision:
        """Post the prompt, wait for an answer (or the timeout), close the prompt."""
        store = self._store
        if await store.tool_always_allowed(platform, target.chat_id, call.tool):
            return "always"
        adapter = self._adapters[platform]
        approval_id = secrets.token_hex(6)
        waiting = _Waiting(may_answer)
        self._waiting[approval_id] = waiting
        try:
            message_id = await adapter.send_approval(target, call.tool, call.preview(), approval_id)
            await store.record_approval_prompt(platform, target.chat_id, message_id, call.tool)
            try:
                async with asyncio.timeout(self._timeout_seconds()):
                    decision, user_id = await waiting.answer
            except TimeoutError:
                decision, user_id = "timeout", ""
            except asyncio.CancelledError:  # /stop or shutdown: the buttons answer nothing now
                await asyncio.shield(self._close(adapter, target, message_id, STOPPED_TEXT))
                raise
        finally:
            self._waiting.pop(approval_id, None)
        if decision == "always":
            await store.allow_tool_always(platform, target.chat_id, call.tool, user_id)
        await store.record_approval_decision(platform, target.chat_id, message_id, decision)
        await self._close(adapter, target, message_id, OUTCOME_TEXT[decision])
        return decision

    async def _close(
        self, adapter: PlatformAdapter, target: DeliveryTarget, message_id: str, outcome: str
    ) -> None:
        try:
            await adapter.close_approval(target, message_id, outcome)
        except Exception as exc:  # the decision stands; the buttons stay, answering nothing
            log.warning("%s: approval prompt not closed: %s", adapter.name, type(exc).__name__)


@dataclass(frozen=True, slots=True)
class ChatApprovals:
    """One turn's approval port: prompts go to its chat, answered by its user or an admin."""

    desk: ApprovalDesk
    platform: str
    target: DeliveryTarget
    may_answer: MayAnswer

    async def decide(self, call: ToolCallPreview) -> Decision:
        """Ask in the chat (or find the tool allowed for good)."""
        return await self.desk.ask(self.platform, self.target, call, self.may_answer)
