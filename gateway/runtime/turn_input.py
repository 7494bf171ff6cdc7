"""What a turn needs before the model: the spending limit, the session (its one lookup per
turn) and the batch's photos, files and voice notes read for the model.

A batch that needs no model call is answered here instead: over a spending limit (a job run's
refusal says which job), or with nothing the model could read (what could not be read, or what
the bot can do for a bare mention).
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.delivery.deliverer import Deliverer
from gateway.jobs.scheduler import over_budget_notice
from gateway.media.prepare import MediaReader, PreparedMedia
from gateway.messages.attachments import empty_message_reply
from gateway.messages.inbound import InboundMessage
from gateway.platforms.base import PlatformAdapter
from gateway.runtime.app import App
from gateway.sessions.runtime import SessionAddress, SessionRuntime
from gateway.store.job_records import is_job_run
from gateway.users.access import Budget


class TurnInput:
    """Prepares each turn of the turn runner (:mod:`gateway.runtime.turns`)."""

    def __init__(
        self, app: App, adapters: Mapping[str, PlatformAdapter], delivery: Deliverer
    ) -> None:
        self.app = app
        self.adapters = adapters
        self.delivery = delivery
        self.budget = Budget(app.config.limits, app.repo)
        self.media = MediaReader(app.config.media, app.services.model)
        """Reads the photos, files and voice notes of a turn before the model sees it."""

    async def prepare(
        self,
        batch: list[InboundMessage],
        address: SessionAddress,
        is_admin: bool,
        stored_message_id: int | None,
    ) -> tuple[SessionRuntime, PreparedMedia] | None:
        """The turn's session (its one lookup) and media read for the model; None when the
        batch was answered instead (over a spending limit, nothing the model could read)."""
        first = batch[0]
        attached = [kind for message in batch for kind in message.attachments]
        spans = self.app.services.spans
        with spans.span("receive", {"hermes.attachments": len(attached)}):
            refusal = await self.budget.refusal(address.user_key, is_admin=is_admin)
            if refusal is not None:  # over a spending limit: no model call
                if is_job_run(batch[-1].platform_message_id):
                    refusal = over_budget_notice(batch[-1], refusal)
                await self.delivery.deliver(batch, [refusal])
                return None
            runtime = await self.app.sessions.get(address)
            media = PreparedMedia()
            if stored_message_id is None:  # a resumed turn's content is stored already
                adapter = self.adapters[first.platform]
                media = await self.media.prepare(
                    batch, adapter.fetch_file, first.platform, runtime.model.info
                )
                if not any(message.text for message in batch) and not media.parts:
                    # Nothing the model could read: say so (or what the bot can do for a bare
                    # mention) instead of staying silent.
                    await self.delivery.deliver(batch, self._nothing_to_read(media, attached))
                    return None
        return runtime, media

    def _nothing_to_read(self, media: PreparedMedia, attached: list[str]) -> list[str]:
        """The answer to a turn with nothing for the model: what could not be read, or, for a
        message with nothing at all in it (a bare mention), what the bot can do."""
        if media.notices or attached:
            return media.replies_instead(attached, self.media.readable_text())
        return [empty_message_reply(self.media.readable_text())]

    async def aclose(self) -> None:
        """Close the media reader (at shutdown)."""
        await self.media.aclose()
