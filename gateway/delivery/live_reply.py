"""Live replies: the chat shows the answer while the model writes it.

A :class:`LiveReply` observes one turn (:mod:`agent.reply_stream`) and updates the chat at
most once per :attr:`~gateway.platforms.base.LiveMode.interval`: the answer so far, split at
the platform's limit like the final reply, each part a message sent once and then edited as
it grows (in a Telegram private chat, the part being written is an ephemeral draft instead,
and the finished reply is sent as new messages).
While a tool runs, the live text ends with a short progress line. Intermediate text is plain;
the final text, formatted, is delivered by :mod:`gateway.delivery.deliverer`, which edits these
messages into the reply's parts instead of sending new ones.

Exactly once: every live message is recorded in the store (:meth:`record_live_message`)
right after it was sent and before its first edit. Delivery finds them there; so does a turn
resumed after a crash, which goes on editing them. A crash between a live send and its record
leaves that one message unknown: unlike a reply part in doubt, no platform is asked for it
yet, so it stays beside the reply (a window of one database write, groups and Discord only).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from gateway.messages.inbound import InboundMessage
from gateway.platforms.base import DeliveryTarget, LiveMode
from gateway.platforms.ports import LiveSender
from gateway.store.ports import LiveMessageStore

log = logging.getLogger(__name__)

PROGRESS_LINE = "⏳ running {tools}…"
"""Shown under the live text while tools run."""
TYPING_CURSOR = " …"
"""Ends live text still being written, so it does not read as a finished reply."""
LIVE_MARGIN = 80
"""Room kept free in each live part for the cursor and the progress line."""
MAX_DRAFT_ID = 2**31 - 1
STREAMING_SECONDS = 5.0
"""A chat updated this recently is being written to: no typing indicator meanwhile."""


@dataclass(slots=True)
class LiveUpdates:
    """What a test or benchmark may want to know about one live reply."""

    pushes: int = 0
    """Updates of the chat made (each a draft, a send or one or more edits)."""
    failures: int = 0


class LiveReply:
    """The live view of one turn's reply in one chat (a :class:`ReplyObserver`)."""

    def __init__(
        self,
        adapter: LiveSender,
        target: DeliveryTarget,
        mode: LiveMode,
        record: Callable[[int, str], Awaitable[None]],
        messages: Sequence[str] = (),
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.adapter = adapter
        self.target = target
        self.mode = mode
        self._record = record
        self.messages: list[str] = list(messages)
        """Platform ids of the live messages, in part order (some from before a restart)."""
        self._shown: list[str | None] = [None] * len(self.messages)
        self._text = ""
        self._status: str | None = None
        self._status_shown = False
        self._clock = clock
        # The first update waits one interval too: a quick answer arrives whole, as before.
        self._last_push = clock()
        self._wake = asyncio.Event()
        self._draft_id = random.randint(1, MAX_DRAFT_ID)
        self._push_task: asyncio.Future[None] | None = None
        self._pump = asyncio.create_task(self._run())
        self.updates = LiveUpdates()

    # -- observer (agent.reply_stream.ReplyObserver) -------------------------------------

    def model_call_started(self) -> None:
        """A new model call: the text of the previous one (before its tool calls) is gone."""
        self._text = ""

    def text_delta(self, text: str) -> None:
        self._text += text
        if self._status_shown:  # a progress line stays until the chat showed it once
            self._status = None
        self._wake.set()

    def tools_started(self, names: Sequence[str]) -> None:
        self._status = PROGRESS_LINE.format(tools=", ".join(names) or "a tool")
        self._status_shown = False
        self._wake.set()

    def streaming(self) -> bool:
        """Whether the chat was updated lately (typing is not needed while text streams)."""
        return self.updates.pushes > 0 and self._clock() - self._last_push < STREAMING_SECONDS

    # -- updating the chat ---------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            wait = self._last_push + self.mode.interval - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
            self._wake.clear()
            self._last_push = self._clock()
            self._push_task = asyncio.ensure_future(self._push())
            await asyncio.shield(self._push_task)

    async def _push(self) -> None:
        status = self._status
        try:
            await self._show(self._live_parts())
            self.updates.pushes += 1
            if status is not None and status == self._status:
                self._status_shown = True
        except Exception as exc:
            # A live update is a courtesy: the final reply is delivered whatever happens here.
            self.updates.failures += 1
            log.warning("%s: live reply update failed: %s", self.adapter.name, exc)

    def _live_parts(self) -> list[str]:
        # The adapter's own split, as for the final reply, so the parts end where its parts do.
        limit = self.adapter.message_limit - LIVE_MARGIN
        parts = self.adapter.split(self._text, limit) if self._text else []
        if not parts:
            return [self._status or TYPING_CURSOR.strip()]
        parts[-1] += f"\n\n{self._status}" if self._status else TYPING_CURSOR
        return parts

    async def _show(self, parts: list[str]) -> None:
        if self.mode.drafts:
            # Only the part being written: sending the finished ones early would leave
            # messages a crash could orphan, where drafts leave nothing behind.
            await self.adapter.send_draft(self.target, self._draft_id, parts[-1])
            return
        for index, text in enumerate(parts):
            if index < len(self.messages):
                if self._shown[index] != text:
                    await self.adapter.edit_part(
                        self.target, self.messages[index], text, formatted=False
                    )
                    self._shown[index] = text
            else:
                await self._send_new(index, text)

    async def _send_new(self, index: int, text: str) -> None:
        message_id = await self.adapter.send_preview(self.target, text)
        self.messages.append(message_id)
        self._shown.append(text)
        await self._record(index, message_id)

    async def close(self) -> None:
        """Stop updating; waits for an update under way, so nothing lands after the final
        text."""
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump
        if self._push_task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._push_task


@contextlib.asynccontextmanager
async def live_reply(
    repo: LiveMessageStore, adapter: LiveSender, batch: Sequence[InboundMessage]
) -> AsyncIterator[LiveReply | None]:
    """A live view of the turn answering ``batch`` while the body runs (None when the
    platform or the chat shows replies only when finished)."""
    last = batch[-1]
    target = DeliveryTarget.of(last)
    mode = adapter.live_mode(target)
    if mode is None:
        yield None
        return
    anchors = [message.platform_message_id for message in batch]
    known = await repo.live_messages(last.platform, last.chat_id, anchors)

    async def record(index: int, message_id: str) -> None:
        await repo.record_live_message(last.platform, last.chat_id, anchors[0], index, message_id)

    live = LiveReply(adapter, target, mode, record, known)
    try:
        yield live
    finally:
        await live.close()
