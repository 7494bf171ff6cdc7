"""Admission: who may talk to the bot, the one refusal of those who may not, and who may answer
an approval prompt.

Every message the adapters hand over passes here once (:meth:`Admission.admit`): it is recorded
durably in the inbound table, keyed by its platform id, before the adapter acknowledges it (a
redelivered update is recognised there and dropped), and a user not allowed to talk gets one
polite refusal and nothing else happens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from gateway.config.schema import Config
from gateway.messages.inbound import InboundMessage
from gateway.platforms.base import DeliveryTarget, PlatformAdapter
from gateway.platforms.registry import PLATFORMS
from gateway.store.ports import AdmissionStore, UserStore
from gateway.users.access import RuntimeAccess
from gateway.users.allowlist import Allowlist, UserMatcher

log = logging.getLogger(__name__)

MayAnswer = Callable[[str, str | None], bool]
"""Whether the user (id, username) pressing an approval button may answer it."""


class Admission:
    """The allowlists, the admins and the run-time access decisions, asked once per message."""

    def __init__(
        self,
        config: Config,
        repo: AdmissionStore,
        users: UserStore,
        adapters: Mapping[str, PlatformAdapter],
    ) -> None:
        self.repo = repo
        self.adapters = adapters
        sections = PLATFORMS.sections(config)
        self.allowlists = {
            name: Allowlist(section.allowed_users, allow_all=section.allow_all)
            for name, section in sections.items()
        }
        self.admins = {name: UserMatcher(section.admin_users) for name, section in sections.items()}
        self.access = RuntimeAccess(users)
        """``/allow`` and ``/deny`` decisions, over the config's allowlists."""

    async def start(self) -> None:
        """Read who was told no already (once, not once per restart) and the decisions."""
        for name, allowlist in self.allowlists.items():
            allowlist.remember_told(await self.repo.refused_users(name))
        await self.access.refresh()

    async def admit(self, message: InboundMessage) -> bool:
        """Record ``message`` durably; whether it goes on to its session. A duplicate is
        dropped; a user who may not talk is refused (told once)."""
        allowlist = self.allowlists[message.platform]
        await self.access.refresh_if_stale()
        allowed = self._may_talk(message, allowlist)
        fresh = await self.repo.record_inbound(
            message.platform,
            message.platform_message_id,
            session_key=message.session_key,
            chat_id=message.chat_id,
            user_id=message.user_id,
            text=message.text,
            payload=message.to_payload(),
        )
        if not fresh:
            log.info("%s: duplicate %s dropped", message.platform, message.platform_message_id)
            return False
        if not allowed:
            await self._refuse(message, allowlist)
            return False
        return True

    def _may_talk(self, message: InboundMessage, allowlist: Allowlist) -> bool:
        """Admins always; else an admin's run-time decision; else the config's allowlist."""
        if self.is_admin(message):
            return True
        decision = self.access.decision(message.platform, message.user_id, message.username)
        if decision is not None:
            return decision == "allow"
        return allowlist.allows(message.user_id, message.username)

    async def may_run_job(self, run: InboundMessage) -> bool:
        """Whether a job's owner may still talk to the bot (a job's run is their message)."""
        await self.access.refresh_if_stale()
        return self._may_talk(run, self.allowlists[run.platform])

    def is_admin(self, message: InboundMessage) -> bool:
        """Whether the message's writer is one of its platform's ``admin_users``."""
        admins = self.admins.get(message.platform)
        return admins is not None and admins.matches(message.user_id, message.username)

    def may_answer(self, message: InboundMessage) -> MayAnswer:
        """Who may answer the approval prompts of the turn ``message`` started: its writer
        or an admin."""
        admins = self.admins.get(message.platform)

        def may_answer(user_id: str, username: str | None) -> bool:
            if user_id == message.user_id:
                return True
            return admins is not None and admins.matches(user_id, username)

        return may_answer

    async def access_changed(self) -> None:
        """An admin allowed or denied someone: their next message is decided by it."""
        await self.access.refresh()

    async def _refuse(self, message: InboundMessage, allowlist: Allowlist) -> None:
        repo = self.repo
        await repo.mark_inbound(message.platform, message.platform_message_id, "refused")
        log.info("%s: refused user %s", message.platform, message.user_id)
        if not allowlist.should_tell(message.user_id):
            return
        adapter = self.adapters[message.platform]
        refusal = allowlist.refusal_text(message.user_id)
        ids = await adapter.send(DeliveryTarget.of(message), refusal)
        await repo.mark_inbound(
            message.platform, message.platform_message_id, "refused", reply_platform_ids=ids
        )
