"""Delivering replies exactly once per part, retrying sends that failed transiently.

A reply is planned in the store (every part, in order, tied to every message it answers)
before its first part is sent; each part's platform id is stored right after its send, and
the commit storing the last one closes the messages. A crash therefore leaves either a
finished reply or one that knows which parts are still to send: :meth:`Deliverer.send` sends
just those, with no new model call. Between a platform accepting a part and the commit that
records it, a crash leaves that one part in doubt; a resumed reply first asks the adapter
whether it was delivered (:meth:`~gateway.platforms.base.PlatformAdapter.find_sent`: Discord
reads the channel history; Telegram, which cannot read messages, tries to edit the ids after
the last known one to the same text and gets "message is not modified" for its own, in
private chats only). Where the platform cannot tell (Telegram groups), the part is sent again.

A reply shown live while it was written (:mod:`gateway.delivery.live_reply`) already has messages in
the chat, recorded in the store: its parts are edited into them, in order, instead of being
sent (an edit to the same text is harmless, so a resumed reply simply edits again); live
messages beyond the final parts are deleted; a live message that cannot be edited any more
(deleted by someone) is replaced by a new message.

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
from typing import TypeVar

from tenacity import RetryCallState

from agent.retries import (
    Clock,
    Sleep,
    doubling,
    last_failure,
    retried,
    retry_if_transient,
    stop_at_deadline,
    wait_retry_after,
)
from gateway.config.schema import GatewaySettings
from gateway.delivery.in_flight import InFlight
from gateway.delivery.voice import VoiceReplies, with_voices
from gateway.messages.inbound import InboundMessage
from gateway.platforms.base import DeliveryTarget, SendFailure, VoiceNote
from gateway.platforms.ports import ReplySender
from gateway.store.ports import DeliveryStore
from gateway.store.records import ReplyPart, ReplyRecord, VoiceAudio

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 30.0
"""The longest wait between two attempts of one send (the backoff doubles up to it)."""
NO_TEXT_REPLY = "(I have no answer to give to that.)"
"""Sent when a turn produced no text at all, so that no message goes unanswered."""

VOICE_REFUSED_TEXT = "(The voice message could not be sent here; the answer follows as text.)"
"""Stands in for a voice message the platform refused for good, so the reply goes on."""

T = TypeVar("T")


class TransientSendError(Exception):
    """A send failed in a way another attempt may mend; carries what the adapter said of it
    (:data:`~agent.retries.is_transient`, and its ``retry_after`` for the wait)."""

    transient = True

    def __init__(self, failure: SendFailure) -> None:
        super().__init__(failure.reason)
        self.failure = failure
        self.retry_after = failure.retry_after


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
    send: Callable[[], Awaitable[T]],
    classify: Callable[[Exception], SendFailure],
    policy: RetryPolicy,
    *,
    what: str,
    clock: Clock = time.monotonic,
    sleep: Sleep = asyncio.sleep,
) -> T:
    """``send()`` until it returns (a platform id); retries what ``classify`` calls transient.

    Raises :class:`DeliveryFailed` on a permanent failure or when the next wait would end
    past ``policy.give_up_after``. ``what`` names the send in the one warning logged when
    retries start.
    """

    async def attempt() -> T:
        try:
            return await send()
        except Exception as exc:
            failure = classify(exc)
            if not failure.transient:
                raise DeliveryFailed(failure.reason) from exc
            raise TransientSendError(failure) from exc

    def warn_once(retry_state: RetryCallState) -> None:
        if retry_state.attempt_number == 1:  # the first failure: retries start
            reason = last_failure(retry_state)
            log.warning(
                "%s: send failed (%s); retrying for up to %.0f s",
                what,
                reason,
                policy.give_up_after,
            )

    try:
        return await retried(
            attempt,
            stop=stop_at_deadline(policy.give_up_after, clock),
            wait=wait_retry_after(doubling(policy.first_backoff, policy.max_backoff)),
            retry=retry_if_transient,  # a TransientSendError; DeliveryFailed ends it at once
            sleep=sleep,
            after=warn_once,
        )
    except TransientSendError as exc:
        raise DeliveryFailed(
            f"still failing after {policy.give_up_after:.0f} s of retries: {exc.failure.reason}"
        ) from exc.__cause__


class Deliverer:
    """Plans replies in the store and sends their parts, each exactly once."""

    def __init__(
        self,
        repo: DeliveryStore,
        adapters: Mapping[str, ReplySender],
        policy: RetryPolicy,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        on_retry: Callable[[str], None] = lambda platform: None,
        voice: VoiceReplies | None = None,
    ) -> None:
        self.repo = repo
        self.voice = voice
        """Speaks a turn's answer when its chat wants voice (None: never)."""
        self.on_retry = on_retry
        """Told the platform's name before each send attempted again (the daemon counts)."""
        self.adapters = adapters
        self.policy = policy
        self._clock = clock
        self._sleep = sleep
        self.in_flight = InFlight()
        """Replies being planned or sent now, each counted once (the gateway's idle wait
        waits for none)."""

    async def deliver(
        self,
        batch: Sequence[InboundMessage],
        texts: Sequence[str],
        *,
        closes_as: str = "done",
        failure: str | None = None,
        speak: str | None = None,
    ) -> ReplyRecord:
        """Answer the messages of ``batch`` (one turn) with ``texts``, split for the platform.

        ``speak``: the answer among ``texts`` to send as voice messages too, when the chat
        wants voice (the texts are sent whatever the voice does). Their status becomes
        ``closes_as`` once the last part is out (``failure`` is the reason stored with a
        failed turn's notice), or ``failed`` if the reply cannot be delivered. Returns the
        reply as it ended.
        """
        last = batch[-1]
        adapter = self.adapters[last.platform]
        with self.in_flight.track():
            plan = None
            if speak and self.voice is not None:
                plan = await self.voice.plan(batch, speak)
            if plan is not None and plan.note:
                texts = [*texts, plan.note]
            parts = [part for text in texts for part in adapter.split(text)] or [NO_TEXT_REPLY]
            voices: dict[int, VoiceAudio] = {}
            if plan is not None and plan.voices:
                streamed = bool(
                    await self.repo.live_messages(
                        last.platform, last.chat_id, [m.platform_message_id for m in batch]
                    )
                )
                parts, voices = with_voices(adapter, texts, parts, plan, streamed=streamed)
            reply = await self.repo.plan_reply(
                last.platform,
                [message.platform_message_id for message in batch],
                parts,
                session_key=last.session_key,
                chat_id=last.chat_id,
                thread_id=last.thread_id,
                closes_as=closes_as,
                failure=failure,
                voices=voices,
            )
            return await self._send_unsent(reply, resumed=False)

    async def send(self, reply: ReplyRecord, *, resumed: bool = False) -> ReplyRecord:
        """Send the parts of ``reply`` not sent yet, in order; returns it as it ended.

        ``resumed``: the reply was being sent when the last run died, so its first unsent part
        may have gone out without its id being recorded; the platform is asked first.
        """
        with self.in_flight.track():
            return await self._send_unsent(reply, resumed=resumed)

    async def _send_unsent(self, reply: ReplyRecord, *, resumed: bool) -> ReplyRecord:
        adapter = self.adapters[reply.platform]
        target = DeliveryTarget(reply.chat_id, reply.thread_id)
        final_index = reply.parts[-1].index
        sent = {part.index: part.platform_message_id for part in reply.parts}
        in_doubt = reply.unsent[0].index if resumed and reply.unsent else None
        live = await self.repo.live_messages(reply.platform, reply.chat_id, reply.answers)
        for part in reply.unsent:
            what = f"{reply.platform}: reply {reply.id} part {part.index + 1}/{len(reply.parts)}"
            try:
                platform_id = None
                if part.voice is not None:
                    platform_id = await self._send_voice(adapter, target, part, what)
                elif part.index < len(live):
                    platform_id = await self._finish_live(
                        adapter, target, live[part.index], part, what
                    )
                elif part.index == in_doubt:
                    platform_id = await self._find_sent(reply, part, what)
                if platform_id is None:
                    platform_id = await self._retrying(
                        partial(adapter.send_part, target, part.text), adapter, what
                    )
            except DeliveryFailed as exc:
                log.error("%s to chat %s not delivered: %s", what, reply.chat_id, exc.reason)
                await self.repo.fail_reply(reply.id, exc.reason)
                return _ended(reply, sent, "failed", exc.reason)
            if part.index == final_index:
                texts = sum(1 for each in reply.parts if each.voice is None)
                await self._drop_live(adapter, target, live[texts:])
            await self.repo.record_sent_part(
                reply.id, part.index, platform_id, last=part.index == final_index
            )
            sent[part.index] = platform_id
        return _ended(reply, sent, "sent", None)

    async def _send_voice(
        self, adapter: ReplySender, target: DeliveryTarget, part: ReplyPart, what: str
    ) -> str:
        """Send a voice part (its audio from the blob folder), retried like a text part.

        A voice part a crash left in doubt is sent again: no platform lets the bot find its
        own voice message by content. One that cannot be sent (refused for good, e.g. by a user
        who accepts no voice messages, or its audio gone) becomes a text message: its caption,
        else a short note, so the reply goes on."""
        voice = part.voice
        audio = self._voice_audio(voice) if voice is not None else None
        if voice is not None and audio is not None:
            note = VoiceNote(audio, voice.duration, voice.waveform)
            try:
                return await self._retrying(
                    partial(adapter.send_voice, target, note, part.text), adapter, what
                )
            except DeliveryFailed as exc:
                log.warning("%s: voice message refused (%s); sending text", what, exc.reason)
        text = part.text or VOICE_REFUSED_TEXT
        return await self._retrying(partial(adapter.send_part, target, text), adapter, what)

    def _voice_audio(self, voice: VoiceAudio) -> bytes | None:
        """The OGG/Opus bytes of a voice part; None (logged) when they cannot be read."""
        if self.voice is None:
            log.warning("a voice part, but no voice replies configured")
            return None
        try:
            return self.voice.audio(voice)
        except OSError as exc:
            log.warning("voice audio %s cannot be read: %s", voice.blob[:12], exc)
            return None

    async def _retrying(
        self, send: Callable[[], Awaitable[T]], adapter: ReplySender, what: str
    ) -> T:

        async def sleep(seconds: float) -> None:  # waits only before another attempt
            self.on_retry(adapter.name)
            await self._sleep(seconds)

        return await send_with_retry(
            send,
            adapter.classify_send_error,
            self.policy,
            what=what,
            clock=self._clock,
            sleep=sleep,
        )

    async def _finish_live(
        self,
        adapter: ReplySender,
        target: DeliveryTarget,
        message_id: str,
        part: ReplyPart,
        what: str,
    ) -> str | None:
        """Edit a live message into its final part; None when it cannot be edited any more
        (the part is then sent as a new message)."""
        try:
            await self._retrying(
                partial(adapter.edit_part, target, message_id, part.text, formatted=True),
                adapter,
                what,
            )
        except DeliveryFailed as exc:
            log.warning("%s: live message cannot be finished (%s); sending it", what, exc.reason)
            return None
        return message_id

    async def _drop_live(
        self, adapter: ReplySender, target: DeliveryTarget, extra: Sequence[str]
    ) -> None:
        """Delete live messages the final reply has no part for (it split differently)."""
        for message_id in extra:
            try:
                await adapter.delete_part(target, message_id)
            except Exception as exc:
                log.warning("%s: live message %s not deleted: %s", adapter.name, message_id, exc)

    async def _find_sent(self, reply: ReplyRecord, part: ReplyPart, what: str) -> str | None:
        """The id of ``part`` if the platform shows it was delivered before the crash."""
        adapter = self.adapters[reply.platform]
        # The part went out after the previous one, or (the first) after every message that
        # was recorded before the reply was planned.
        previous = reply.parts[part.index - 1].platform_message_id if part.index else None
        anchor = None if previous else await self.repo.newest_inbound_before(reply.id)
        after = previous or (adapter.anchor_of(anchor) if anchor else None)
        if after is None:
            return None
        sent, received = await self.repo.recent_chat_ids(reply.platform, reply.chat_id)
        known = sent | {adapter.anchor_of(platform_id) for platform_id in received}
        found = await send_with_retry(
            partial(
                adapter.find_sent,
                DeliveryTarget(reply.chat_id, reply.thread_id),
                part.text,
                after,
                frozenset(known),
            ),
            adapter.classify_send_error,
            self.policy,
            what=what,
            clock=self._clock,
            sleep=self._sleep,
        )
        if found is not None:
            log.info("%s was delivered before the restart; not sending it again", what)
        return found


def _ended(
    reply: ReplyRecord, sent: dict[int, str | None], status: str, failure: str | None
) -> ReplyRecord:
    parts = tuple(replace(part, platform_message_id=sent[part.index]) for part in reply.parts)
    return replace(reply, status=status, failure=failure, parts=parts)
