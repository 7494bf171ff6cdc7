"""Failover with Telegram in webhook mode: the standby's endpoint and the leader's intake.

Behind the user's load balancer Telegram may POST an update to any host. A standby answers it
with :class:`StandbyWebhook`: the update is stored raw in the webhook inbox (idempotent by
update id) on the standby's one database connection, then acknowledged 200. The leader takes
the inbox in (:func:`take_kept_updates`) through the adapter, as if the update had been POSTed
to it: recorded in the inbound table (duplicates dropped), then deleted from the inbox. So no
update is lost whichever host Telegram reaches. Every host must answer to the same secret token.
"""

from __future__ import annotations

import asyncio
import logging
import os
from types import TracebackType
from typing import Any

from gateway.config.schema import Config, ConfigError
from gateway.messages.failures import failure_summary
from gateway.platforms.base import PlatformAdapter
from gateway.platforms.telegram.settings import TelegramSettings
from gateway.platforms.telegram.webhook import MalformedUpdate, WebhookServer
from gateway.runtime.election import Election
from gateway.store.ports import WebhookInbox
from gateway.store.webhook_inbox import keep_update

log = logging.getLogger(__name__)

PLATFORM = "telegram"
INBOX_POLL_SECONDS = 0.5
"""How often the leader looks for updates the standbys kept (no event crosses hosts)."""


def standby_webhook_settings(config: Config) -> TelegramSettings | None:
    """Telegram's settings when it runs in webhook mode (so standbys serve the endpoint too).

    Raises ConfigError when the webhook secret's variable is not set: a generated secret
    would differ from host to host, and a standby would refuse what Telegram sends it."""
    settings = getattr(config.platforms, PLATFORM, None)
    if not isinstance(settings, TelegramSettings) or not settings.enabled:
        return None
    if settings.mode != "webhook":
        return None
    if not os.environ.get(settings.webhook_secret_env, "").strip():
        raise ConfigError(
            f"platforms.telegram.webhook_secret_env: set {settings.webhook_secret_env} to the "
            "same secret on every host (gateway.failover with a webhook: any host may receive it)"
        )
    return settings


class StandbyWebhook:
    """Telegram's webhook endpoint while this gateway stands by (an async context manager)."""

    def __init__(self, settings: TelegramSettings, election: Election) -> None:
        self._election = election
        self._server = WebhookServer(
            listen=settings.webhook_listen,
            port=settings.webhook_port,
            path=settings.webhook_path,
            secret=os.environ[settings.webhook_secret_env].strip(),
            handle=self._keep,
        )

    async def __aenter__(self) -> StandbyWebhook:
        await self._server.start()
        log.info(
            "failover: standby webhook on %s keeps updates for the leader", self._server.local_url
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._server.stop()

    async def _keep(self, data: dict[str, Any]) -> None:
        update_id = data.get("update_id")
        if not isinstance(update_id, int):
            raise MalformedUpdate("no integer update_id")
        await self._election.use(
            lambda connection: keep_update(connection, PLATFORM, update_id, data)
        )


async def take_kept_updates(inbox: WebhookInbox, adapter: PlatformAdapter) -> None:
    """The leader's loop: take in what standbys kept for ``adapter``, then delete it; forever."""
    while True:
        try:
            updates = await inbox.waiting_webhook_updates(adapter.name)
            for data in updates:
                await adapter.take_webhook_update(data)
            if updates:
                ids = [int(data["update_id"]) for data in updates]
                await inbox.drop_webhook_updates(adapter.name, ids)
                log.info("%s: took in %d update(s) a standby received", adapter.name, len(ids))
                continue
        except Exception as exc:  # the database or the intake failed: the updates stay kept
            log.warning("%s: webhook inbox not taken in: %s", adapter.name, failure_summary(exc))
        await asyncio.sleep(INBOX_POLL_SECONDS)
