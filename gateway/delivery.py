"""Delivering replies exactly once per part, retrying sends that failed transiently.

A reply is planned in the store (every part, in order, tied to every message it answers)
before its first part is sent; each part's platform id is stored right after its send, and
the commit storing the last one closes the messages. A crash therefore leaves either a
finished reply or one that knows which parts are still to send: :meth:`Deliverer.send` sends
just those, with no new model call. The one window left is between a platform accepting a
part and the commit recording it (a few milliseconds): a crash there sends that part again,
because neither Telegram nor Discord can be asked whether a message went out.

A send that fails transiently (the adapter says which failures are: HTTP 5xx, a dropped
connection, a 429 its client's limiter gave up on) is retried with a doubling backoff, or
after the platform's ``retry_after``, for at most ``gateway.delivery_retry_seconds``. The
retry runs in the session's worker, so a chat's replies stay in order while other chats carry
on. A permanent failure (bot blocked, chat gone), or running out of time, ends the reply and
every message it answers ``failed`` with the reason, logged once; the answer is never
generated again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from gateway.config import GatewaySettings
from gateway.inbound import InboundMessage
from gateway.platforms.base import DeliveryTarget, PlatformAdapter, SendFailure
from gateway.store.records import ReplyRecord
from gateway.store.repository import Repository

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 30.0
"""The longest wait between two attempts of one send (the backoff doubles up to it)."""
NO_TEXT_REPLY = "(I have no answer to give to that.)"
"""Sent when a turn produced no text at all, so that no message goes unanswered."""

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class DeliveryFailed(Exception):
    """A part could not be delivered: refused for good, or still failing when time ran out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long and how often one send is retried."""

    give_up_after: float = 600.0
    """Seconds from the first failure after which a transient failure counts as permanent."""
    first_backoff: float = 1.0
    max_backoff: float = MAX_BACKOFF_SECONDS

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> RetryPolicy:
        return cls(settings.delivery_retry_seconds, settings.delivery_backoff_seconds)


async def send_with_retry(
    send: Callable[[], Awaitable[str]],
    classify: Callable[[Exception], SendFailure],
    policy: RetryPolicy,
    *,
    what: str,
    clock: Clock = time.monotonic,
    sleep: Sleep = asyncio.sleep,
) -> str:
    """``send()`` until it returns a platform id; retries what ``classify`` calls transient.

    Raises :class:`DeliveryFailed` on a permanent failure or when the next wait would end
    past ``policy.give_up_after``. ``what`` names the send in the one warning logged when
    retries start.
    """
    deadline: float | None = None
    backoff = policy.first_backoff
    while True:
        try:
            return await send()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = classify(exc)
            if not failure.transient:
                raise DeliveryFailed(failure.reason) from exc
            now = clock()
            if deadline is None:
                deadline = now + policy.give_up_after
                log.warning(
                    "%s: send failed (%s); retrying for up to %.0f s",
                    what,
                    failure.reason,
                    policy.give_up_after,
                )
            wait = failure.retry_after if failure.retry_after is not None else backoff
            if now + wait > deadline:
                raise DeliveryFailed(
                    f"still failing after {policy.give_up_after:.0f} s of retries: {failure.reason}"
                ) from exc
            await sleep(wait)
            backoff = min(backoff * 2, policy.max_backoff)


class Deliverer:
    """Plans replies in the store and sends their parts, each exactly once."""

    def __init__(
        self,
        repo: Repository,
        adapters: Mapping[str, PlatformAdapter],
        policy: RetryPolicy,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.repo = repo
        self.adapters = adapters
        self.policy = policy
        self._clock = clock
        self._sleep = sleep

    async def deliver(
        self,
        batch: Sequence[InboundMessage],
        texts: Sequence[str],
        *,
        closes_as: str = "done",
        failure: str | None = None,
    ) -> ReplyRecord:
        """Answer the messages of ``batch`` (one turn) with ``texts``, split for the platform.

        Their status becomes ``closes_as`` once the last part is out (``failure`` is the
        reason stored with a failed turn's notice), or ``failed`` if the reply cannot be
        delivered. Returns the reply as it ended.
        """
        last = batch[-1]
        adapter = self.adapters[last.platform]
        parts = [part for text in texts for part in adapter.split(text)]
        reply = await self.repo.plan_reply(
            last.platform,
            [message.platform_message_id for message in batch],
            parts or [NO_TEXT_REPLY],
            session_key=last.session_key,
            chat_id=last.chat_id,
            thread_id=last.thread_id,
            closes_as=closes_as,
            failure=failure,
        )
        return await self.send(reply)

    async def send(self, reply: ReplyRecord) -> ReplyRecord:
        """Send the parts of ``reply`` not sent yet, in order; returns it as it ended."""
        adapter = self.adapters[reply.platform]
        target = DeliveryTarget(reply.chat_id, reply.thread_id)
        final_index = reply.parts[-1].index
        sent = {part.index: part.platform_message_id for part in reply.parts}
        for part in reply.unsent:
            what = f"{reply.platform}: reply {reply.id} part {part.index + 1}/{len(reply.parts)}"
            try:
                platform_id = await send_with_retry(
                    partial(adapter.send_part, target, part.text),
                    adapter.classify_send_error,
                    self.policy,
                    what=what,
                    clock=self._clock,
                    sleep=self._sleep,
                )
            except DeliveryFailed as exc:
                log.error("%s to chat %s not delivered: %s", what, reply.chat_id, exc.reason)
                await self.repo.fail_reply(reply.id, exc.reason)
                return _ended(reply, sent, "failed", exc.reason)
            await self.repo.record_sent_part(
                reply.id, part.index, platform_id, last=part.index == final_index
            )
            sent[part.index] = platform_id
        return _ended(reply, sent, "sent", None)


def _ended(
    reply: ReplyRecord, sent: dict[int, str | None], status: str, failure: str | None
) -> ReplyRecord:
    parts = tuple(replace(part, platform_message_id=sent[part.index]) for part in reply.parts)
    return replace(reply, status=status, failure=failure, parts=parts)
