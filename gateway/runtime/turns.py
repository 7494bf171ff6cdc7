"""The turn runner: each session's batches, commands and turns, and their approvals' wiring.

A message admitted (:mod:`gateway.runtime.admission`) is dispatched here once: an immediate
command runs beside the session's turn; anything else goes to its session's worker, one batch at
a time, messages that arrived meanwhile merged into the next turn. A turn looks its session up
once (:mod:`gateway.runtime.turn_input`, with the spending limit and the media), calls its agent
once (:meth:`~gateway.sessions.runtime.SessionRuntime.run_turn`) and
delivers the reply through the exactly-once deliverer. Every message of a turn is tied to the
turn's stored user message and to its reply, so a restart resumes what was left (the batch's
steps: :mod:`gateway.runtime.resume`) and never answers a message twice.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Coroutine, Mapping
from typing import Any

from agent.session import TurnSource
from agent.tools.approvals import ApprovalPort
from gateway.commands import Command, CommandContext, CommandHost, CommandRegistry
from gateway.delivery.approvals import ApprovalDesk
from gateway.delivery.deliverer import Deliverer
from gateway.delivery.live_reply import live_reply
from gateway.messages.attachments import unread_attachment_notice
from gateway.messages.failures import failure_summary
from gateway.messages.inbound import InboundMessage
from gateway.messages.turn_text import batch_sent_at, merge_texts
from gateway.platforms.base import DeliveryTarget, PlatformAdapter
from gateway.runtime.admission import Admission
from gateway.runtime.app import App
from gateway.runtime.election import NotLeaderError
from gateway.runtime.metrics import DaemonMetrics
from gateway.runtime.resume import resume_steps
from gateway.runtime.turn_input import TurnInput
from gateway.runtime.workers import DEFAULT_HOLD_SECONDS, DEFAULT_IDLE_SECONDS, SessionWorkers
from gateway.sessions.runtime import SessionAddress, SessionRuntime
from gateway.store.job_records import is_missed_run
from gateway.store.leases import LeaseLostError
from gateway.store.ports import TurnStore

log = logging.getLogger(__name__)

STOP_WAIT_SECONDS = 10.0
"""How long ``/stop`` waits for the cancelled turn to clean up."""
OVERHEAD_SAMPLES = 10_000
"""How many recent per-turn overhead measurements the runner keeps (demo, benchmarks)."""
NOT_LEADING = (LeaseLostError, NotLeaderError)
"""What a turn raises when the gateway stopped leading under it (failover)."""
FAILED_TEXT = "Sorry, I could not answer that ({error}). Please try again."


class TurnRunner:
    """Runs what admission let through: commands, and one agent turn per session batch."""

    def __init__(
        self,
        app: App,
        repo: TurnStore,
        adapters: Mapping[str, PlatformAdapter],
        admission: Admission,
        delivery: Deliverer,
        approvals: ApprovalDesk,
        commands: CommandRegistry,
        metrics: DaemonMetrics,
        host: CommandHost,
        *,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        hold_seconds: float = DEFAULT_HOLD_SECONDS,
    ) -> None:
        self.app = app
        self.repo = repo
        self.adapters = adapters
        self.admission = admission
        self.delivery = delivery
        self.approvals = approvals
        self.commands = commands
        self.workers: SessionWorkers[InboundMessage] = SessionWorkers(
            self.handle_batch,
            mergeable=lambda m: m.command is None,
            holds=lambda m: m.may_continue,
            idle_seconds=idle_seconds,
            hold_seconds=hold_seconds,
        )
        """One worker per session key: one batch at a time, later messages merged."""
        self.host = host
        """What commands may ask of the daemon (``/stop``, health, access changes)."""
        self.input = TurnInput(app, adapters, delivery)
        """Spending limits, the session lookup and the media read before each turn."""
        self.metrics = metrics
        """Where turn and model latencies go (``/metrics``)."""
        self.overhead_ms: collections.deque[float] = collections.deque(maxlen=OVERHEAD_SAMPLES)
        """Per handled turn: time in the gateway and agent minus time waiting on the model."""
        self.resumed_ids: set[tuple[str, str]] = set()
        """Messages the last run left pending, dispatched again at start."""
        self._stopping_keys: set[str] = set()
        self.background: set[asyncio.Task[None]] = set()
        """Work started for messages (an immediate command), waited for by idle waits."""

    def dispatch(self, message: InboundMessage) -> None:
        """An immediate command beside the running turn; anything else to its session."""
        command = message.command
        spec = self.commands.resolve(command) if command is not None else None
        if command is not None and spec is not None and spec.immediate:
            self._spawn(self._run_command(message, command))
            return
        self.workers.submit(message.session_key, message)

    def resume(self, message: InboundMessage) -> None:
        """Dispatch a message the last run left pending (once: a live copy is dropped)."""
        self.resumed_ids.add((message.platform, message.platform_message_id))
        self.dispatch(message)

    def was_resumed(self, message: InboundMessage) -> bool:
        """Whether ``message`` was dispatched already as left pending by the last run."""
        return (message.platform, message.platform_message_id) in self.resumed_ids

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def stop_running(self, key: str) -> bool:
        """``/stop``: cancel the session's running turn and wait for it to clean up."""
        task: asyncio.Task[None] | None = None
        self._stopping_keys.add(key)
        try:
            task = self.workers.cancel_running(key)
            if task is not None:
                await asyncio.wait({task}, timeout=STOP_WAIT_SECONDS)
        finally:
            self._stopping_keys.discard(key)
        return task is not None

    async def handle_batch(self, key: str, batch: list[InboundMessage]) -> None:
        """One worker step: what the last run left unfinished first, then the new turn."""
        if not any(self.was_resumed(m) for m in batch):
            await self._guarded(key, batch, self._handle_new(key, batch))
            return
        platform = batch[0].platform
        records = await self.repo.inbound_records(
            platform, [message.platform_message_id for message in batch]
        )
        for step in resume_steps(batch, records):
            if step.reply_id is not None:
                await self._guarded(key, step.messages, self._send_rest(key, step.reply_id))
            else:
                handled = self._handle_new(key, step.messages, step.user_message_id)
                await self._guarded(key, step.messages, handled)

    async def _send_rest(self, key: str, reply_id: int) -> None:
        """Send what a reply planned before the restart has not sent yet."""
        reply = await self.repo.get_reply(reply_id)
        if reply is not None:
            log.info("session %s: sending the rest of reply %s", key, reply.id)
            await self.delivery.send(reply, resumed=True)

    async def _guarded(
        self, key: str, batch: list[InboundMessage], handling: Coroutine[Any, Any, None]
    ) -> None:
        """Run one step's handling; whatever it raises ends its messages ``failed`` with the
        exception's type recorded and one short notice to the user, so no message stays
        pending, and none is run again at the next start."""
        try:
            await handling
        except asyncio.CancelledError:
            raise
        except NOT_LEADING as exc:
            # Failover: this gateway lost the lease. The turn is not a failure: its messages
            # stay as the store has them, for the next leader to take up.
            log.warning("session %s: turn left to the next leader (%s)", key, exc)
        except Exception as exc:
            summary = failure_summary(exc)
            log.error("session %s: turn failed: %s", key, summary)
            reason = f"turn failed: {summary}"
            text = FAILED_TEXT.format(error=type(exc).__name__)
            try:
                await self.delivery.deliver(batch, [text], closes_as="failed", failure=reason)
            except Exception as again:  # even the notice failed: never run the batch again
                log.error("session %s: notice not sent: %s", key, failure_summary(again))
                for message in batch:
                    await self.repo.mark_inbound(
                        message.platform, message.platform_message_id, "failed"
                    )

    async def _handle_new(
        self, key: str, batch: list[InboundMessage], stored_message_id: int | None = None
    ) -> None:
        """A command, or one agent turn for the merged messages (``stored_message_id``: the
        user message a crashed run already stored for them), traced as one ``turn`` span."""
        first = batch[0]
        attributes: dict[str, str | int] = {
            "hermes.platform": first.platform,
            "hermes.messages": len(batch),
        }
        with self.app.services.spans.span("turn", attributes):
            if first.command is not None:
                await self._run_command(first, first.command)
                return
            if is_missed_run(first.platform_message_id):  # a job run skipped: notice, no turn
                await self.delivery.deliver(batch, [first.text])
                return
            await self._turn(key, batch, stored_message_id)

    async def _turn(
        self, key: str, batch: list[InboundMessage], stored_message_id: int | None
    ) -> None:
        first = batch[0]
        is_admin = self.admission.is_admin(batch[-1])
        address = SessionAddress.of(batch[-1], is_admin=is_admin)
        prepared = await self.input.prepare(batch, address, is_admin, stored_message_id)
        if prepared is None:
            return
        runtime, media = prepared
        attached = [kind for message in batch for kind in message.attachments]
        notices = [*media.notices, *([unread_attachment_notice(attached)] if attached else [])]
        ids = tuple(m.platform_message_id for m in batch)
        adapter = self.adapters[first.platform]
        started = time.perf_counter()
        try:
            async with (
                live_reply(self.app.repo, adapter, batch) as live,
                adapter.typing(DeliveryTarget.of(batch[-1]), live.streaming if live else None),
            ):
                reply = await runtime.run_turn(
                    address,
                    media.content(merge_texts(batch)),
                    source=TurnSource(first.platform, ids, stored_message_id),
                    sent_at=batch_sent_at(batch),
                    observer=live,
                    approvals=self._approvals(batch[-1]),
                )
        except asyncio.CancelledError:
            if key in self._stopping_keys:
                await self._after_user_stop(runtime, batch)
            raise
        notices.extend(reply.notices)
        # A reply shown live is already in the chat, above anything sent now.
        streamed = live is not None and bool(live.messages)
        texts = [reply.text, *notices] if streamed else [*notices, reply.text]
        with self.app.services.spans.span("delivery", {"hermes.parts": len(texts)}):
            await self.delivery.deliver(batch, texts, speak=reply.text)
        waited = reply.result.wait_seconds if reply.result else 0.0
        self._measured(first.platform, time.perf_counter() - started, waited)

    def _measured(self, platform: str, took: float, waited: float) -> None:
        """A turn's time in the daemon (minus the model's) and the model's."""
        self.overhead_ms.append((took - waited) * 1000)
        self.metrics.turn_seconds.labels(platform).observe(took)
        self.metrics.model_seconds.labels(platform).observe(waited)

    def _approvals(self, message: InboundMessage) -> ApprovalPort:
        """The turn's approval prompts: in its chat, answered by its writer or an admin."""
        may_answer = self.admission.may_answer(message)
        return self.approvals.for_turn(message.platform, DeliveryTarget.of(message), may_answer)

    async def _after_user_stop(self, runtime: SessionRuntime, batch: list[InboundMessage]) -> None:
        """A turn cancelled by /stop: reload the context from the store, close the messages."""
        await runtime.agent.after_stop()
        for message in batch:
            await self.repo.mark_inbound(message.platform, message.platform_message_id, "done")

    async def _run_command(self, message: InboundMessage, command: Command) -> None:
        """A command (known or not) answered in the chat; it never reaches the model."""
        is_admin = self.admission.is_admin(message)
        context = CommandContext(
            self.app.sessions,
            SessionAddress.of(message, is_admin=is_admin),
            command.argument,
            is_admin,
            self.host,
            self.commands,
        )
        try:
            text = await self.commands.run(command, context)
        except Exception as exc:
            log.exception("session %s: /%s failed", message.session_key, command.name)
            text = FAILED_TEXT.format(error=type(exc).__name__)
        await self.delivery.deliver([message], [text])

    def busy(self) -> bool:
        """Whether a batch runs or waits, or an immediate command runs."""
        return not self.workers.idle or any(not task.done() for task in self.background)

    def cancel_background(self) -> None:
        """Cancel the immediate commands still running (at shutdown)."""
        for task in self.background:
            task.cancel()

    async def aclose(self) -> None:
        """Close the media reader and the speech provider (at shutdown, once the adapters
        stopped)."""
        await self.input.aclose()
        if self.delivery.voice is not None:
            await self.delivery.voice.aclose()
