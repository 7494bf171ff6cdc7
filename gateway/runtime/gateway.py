"""The gateway daemon: adapters in, session workers, replies out, exactly once.

:class:`Gateway` wires enabled platform adapters to the session manager. Every message is
recorded in the inbound table (keyed by its platform id) before the adapter acknowledges it;
a duplicate is dropped there. Each session's worker runs one turn at a time and merges messages
that arrived meanwhile. Every message of a turn is tied to the turn's stored user message and
to its reply, whose parts are recorded as they are sent (:mod:`gateway.delivery.deliverer`), so a
restart neither loses a recorded message (pending ones are taken up at start, see
:mod:`gateway.runtime.resume`) nor answers one twice, nor sends a part twice.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.session import TurnSource
from agent.tools.approvals import ApprovalPort
from gateway.commands import Command, CommandContext, CommandRegistry, default_registry
from gateway.commands.builtin import STOPPED_TEXT as STOPPED_TEXT  # re-exported
from gateway.delivery.approvals import ApprovalDesk
from gateway.delivery.deliverer import Deliverer, RetryPolicy
from gateway.delivery.in_flight import InFlight
from gateway.delivery.live_reply import live_reply
from gateway.jobs.scheduler import JobScheduler, over_budget_notice
from gateway.media.prepare import MediaReader, PreparedMedia
from gateway.messages.attachments import empty_message_reply, unread_attachment_notice
from gateway.messages.failures import failure_summary
from gateway.messages.inbound import InboundMessage
from gateway.messages.turn_text import MESSAGE_SEPARATOR as MESSAGE_SEPARATOR
from gateway.messages.turn_text import batch_sent_at, merge_texts
from gateway.platforms.base import AdapterHooks, ApprovalPress, DeliveryTarget, PlatformAuthError
from gateway.platforms.registry import PLATFORMS
from gateway.reports.totals import health_text
from gateway.runtime.app import App
from gateway.runtime.metrics import DaemonMetrics
from gateway.runtime.resume import resume_steps
from gateway.runtime.workers import DEFAULT_HOLD_SECONDS, DEFAULT_IDLE_SECONDS, SessionWorkers
from gateway.sessions.runtime import SessionAddress, SessionRuntime
from gateway.store.job_records import is_job_run, is_missed_run
from gateway.store.ports import GatewayStore
from gateway.store.records import InboundRecord
from gateway.users.access import Budget, RuntimeAccess
from gateway.users.allowlist import Allowlist, UserMatcher

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 20.0
"""How long in-flight turns get to finish on SIGINT/SIGTERM; unfinished ones stay pending."""
STOP_WAIT_SECONDS = 10.0
"""How long ``/stop`` waits for the cancelled turn to clean up."""
OVERHEAD_SAMPLES = 10_000
"""How many recent per-turn overhead measurements the gateway keeps (demo, benchmarks)."""
IDLE_WAIT_SECONDS = 30.0
"""How long :meth:`Gateway.wait_idle` waits by default before it gives up (TimeoutError)."""
UNSETTLED_RECHECK_SECONDS = 0.02
"""How often :meth:`Gateway.wait_idle` reads the inbound table again while, with nothing else
running, a message is still unfinished there (no event says when a row changes)."""

DEAD_LETTER_PRUNE_SECONDS = 24 * 3600.0
"""How often quarantined updates past their retention are deleted (also at each start)."""

FAILED_TEXT = "Sorry, I could not answer that ({error}). Please try again."


def _address(message: InboundMessage, is_admin: bool) -> SessionAddress:
    return SessionAddress(
        message.session_key,
        message.platform,
        message.chat_id,
        message.user_id,
        is_group=message.is_group,
        thread_id=message.thread_id,
        username=message.username,
        is_admin=is_admin,
    )


def _stored_message(payload: dict[str, Any] | None) -> InboundMessage | None:
    """The message an inbound record kept, None when it kept none or one that no longer
    reads (a payload from an incompatible version)."""
    if not payload:
        return None
    try:
        return InboundMessage.from_payload(payload)
    except (KeyError, TypeError, ValueError) as exc:
        log.error("a pending message could not be read back: %s", failure_summary(exc))
        return None


class Gateway:
    """The running daemon's core, usable in-process (tests, demo, benchmarks)."""

    def __init__(
        self,
        app: App,
        *,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        hold_seconds: float = DEFAULT_HOLD_SECONDS,
        commands: CommandRegistry | None = None,
    ) -> None:
        self.app = app
        self.repo: GatewayStore = app.repo
        """What the runner itself reads and writes of the store (the inbound table, dead
        letters, replies to resume); the repository is handed whole only to the parts it
        builds, each typed with its own port."""
        self.commands = commands or default_registry()
        adapters = PLATFORMS.build_adapters(app.config, self._hooks)
        self.adapters = {adapter.name: adapter for adapter in adapters}
        sections = PLATFORMS.sections(app.config)
        self.allowlists = {
            name: Allowlist(section.allowed_users, allow_all=section.allow_all)
            for name, section in sections.items()
        }
        self.admins = {name: UserMatcher(section.admin_users) for name, section in sections.items()}
        self.access = RuntimeAccess(app.repo)
        """``/allow`` and ``/deny`` decisions, over the config's allowlists."""
        self.budget = Budget(app.config.limits, app.repo)
        self.workers: SessionWorkers[InboundMessage] = SessionWorkers(
            self._handle_batch,
            mergeable=lambda m: m.command is None,
            holds=lambda m: m.may_continue,
            idle_seconds=idle_seconds,
            hold_seconds=hold_seconds,
        )
        self.media = MediaReader(app.config.media, app.services.model)
        """Reads the photos, files and voice notes of a turn before the model sees it."""
        self.metrics = DaemonMetrics()
        """Latencies, levels and retries only the running daemon knows (``/metrics``)."""
        self.metrics.watch(
            queue_depth=lambda: self.workers.queued_count,
            live_sessions=lambda: app.sessions.loaded_count,
        )
        self.delivery = Deliverer(
            app.repo,
            self.adapters,
            RetryPolicy.from_settings(app.config.gateway),
            on_retry=self.metrics.retried,
        )
        self._started_at = datetime.now(UTC)
        """Approval prompts sent before this are a previous run's (closed at start)."""
        self.approvals = ApprovalDesk(
            app.repo, self.adapters, lambda: app.config.mcp.approval_timeout_seconds
        )
        """Approval prompts waiting for a press (tools in an MCP server's ``ask`` list)."""
        self.overhead_ms: collections.deque[float] = collections.deque(maxlen=OVERHEAD_SAMPLES)
        """Per handled turn: time in the gateway and agent minus time waiting on the model."""
        self._stopping_keys: set[str] = set()
        self._background: set[asyncio.Task[None]] = set()
        """Work started for messages (an immediate command): waited for by :meth:`wait_idle`."""
        self._housekeeping: asyncio.Task[None] | None = None
        """The daily pruning of quarantined updates (not work anyone waits for)."""
        self._receiving = InFlight()
        """Messages being recorded and dispatched by :meth:`receive` now."""
        self._resumed = asyncio.Event()
        """Set once what the last run left pending is dispatched; live messages wait for it."""
        self._resumed_ids: set[tuple[str, str]] = set()
        self.identities: dict[str, str] = {}
        """Who each adapter that started is connected as (``@name``)."""
        self.no_adapter_left = asyncio.Event()
        """Set when every adapter has stopped for good: the daemon has nothing left to do."""
        board = app.services.jobs
        self.scheduler = (
            JobScheduler(board, self.adapters, self._dispatch, self._may_run_job)
            if board is not None
            else None
        )
        """Runs scheduled jobs as turns (None: ``jobs.enabled`` is off)."""
        self._scheduling: asyncio.Task[None] | None = None

    def _hooks(self, platform: str) -> AdapterHooks:
        """What each adapter is built with: the dead-letter table, the daemon's failure
        handling, the commands, and where its catch-up starts."""
        return AdapterHooks(
            quarantine=self.repo.add_dead_letter,
            on_fatal=self._adapter_failed,
            commands=self.commands,
            catch_up_from=functools.partial(self._catch_up_start, platform),
            on_approval=self._on_approval,
        )

    async def _on_approval(self, press: ApprovalPress) -> str | None:
        return await self.approvals.on_press(press)

    async def start(self) -> None:
        """Connect every adapter, log who we are, then handle what was left pending.

        An adapter whose token is rejected is left stopped (one ERROR says which variable to
        fix) while the others serve; when none is left, :attr:`no_adapter_left` is set.
        """
        for adapter in self.adapters.values():
            try:
                identity = await adapter.start(self.receive)
            except PlatformAuthError as exc:
                await adapter.stop()
                adapter.fail(str(exc))
                continue
            self.identities[adapter.name] = identity
            log.info("%s: connected as %s", adapter.name, identity)
        log.info("%s", self.app.services.caching_line)
        log.info("%s", self.app.services.summary_line)
        try:
            for name, allowlist in self.allowlists.items():
                # A refused user is told once, not once per restart.
                allowlist.remember_told(await self.repo.refused_users(name))
            await self.access.refresh()
            for name, adapter in self.adapters.items():
                if adapter.failure is None:  # before resumed turns post prompts of their own
                    await self.approvals.close_stale(name, self._started_at)
            await self.resume_pending()
            self._housekeeping = asyncio.create_task(self._prune_dead_letters_daily())
            if self.scheduler is not None:  # after the resume: a claimed run is resumed once
                self._scheduling = asyncio.create_task(self.scheduler.run())
        finally:
            # Even a failed start must not leave live messages waiting forever.
            self._resumed.set()

    async def prune_dead_letters(self) -> int:
        """Delete quarantined updates older than ``gateway.dead_letter_days``."""
        days = self.app.config.gateway.dead_letter_days
        pruned = await self.repo.prune_dead_letters(datetime.now(UTC) - timedelta(days=days))
        if pruned:
            log.info("deleted %d quarantined update(s) older than %d days", pruned, days)
        return pruned

    async def _prune_dead_letters_daily(self) -> None:
        while True:
            try:
                await self.prune_dead_letters()
            except Exception as exc:  # the database is down: try again next time
                log.warning("quarantine not pruned: %s", failure_summary(exc))
            await asyncio.sleep(DEAD_LETTER_PRUNE_SECONDS)

    def _adapter_failed(self, name: str, reason: str) -> None:
        """An adapter stopped for good (it logged why); stop the daemon when none is left."""
        if all(adapter.failure is not None for adapter in self.adapters.values()):
            log.error("no platform adapter is left running; stopping")
            self.no_adapter_left.set()

    async def _catch_up_start(self, platform: str) -> dict[str, str]:
        """Where an adapter's catch-up starts: the newest message recorded per chat.

        Answered once what the last run left pending is dispatched, so nothing catch-up hands
        over is dispatched twice; the adapter holds live messages until then.
        """
        await self._resumed.wait()
        return await self.repo.newest_inbound_per_chat(platform)

    async def stop(self, grace_seconds: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Stop receiving, let running turns finish within the grace period, disconnect."""
        if self._scheduling is not None:
            self._scheduling.cancel()
        for adapter in self.adapters.values():
            await adapter.stop_receiving()
        if not await self.workers.drain(grace_seconds):
            log.warning("shutdown: turns still running after %.0f s were cancelled", grace_seconds)
        for task in [*self._background, *([self._housekeeping] if self._housekeeping else [])]:
            task.cancel()
        for adapter in self.adapters.values():
            await adapter.stop()
        await self.media.aclose()

    async def resume_pending(self) -> int:
        """Handle messages recorded before a restart but never answered; returns how many."""
        resumed = 0
        for name, adapter in self.adapters.items():
            if adapter.failure is not None:
                continue  # stopped for good (token rejected): they wait for the next start
            for record in await self.repo.pending_inbound(name):
                if record.reply_id is None and record.reply_platform_ids:
                    # Answered before the crash, only the final mark was missing: never resend.
                    await self.repo.mark_inbound(name, record.platform_message_id, "done")
                    continue
                message = _stored_message(record.payload)
                if message is None:  # nothing (readable) kept to answer from
                    await self.repo.mark_inbound(name, record.platform_message_id, "failed")
                    continue
                self._resumed_ids.add((name, record.platform_message_id))
                self._dispatch(message)
                resumed += 1
        if resumed:
            log.info("resuming %d message(s) received before the restart", resumed)
        return resumed

    # -- receiving -------------------------------------------------------------------------

    async def receive(self, message: InboundMessage) -> None:
        """The adapters' callback: record durably (dropping duplicates), then dispatch.

        Text no database could store (a lone surrogate, NUL) is repaired first.
        """
        with self._receiving.track():
            await self._record_and_dispatch(message)

    async def _record_and_dispatch(self, message: InboundMessage) -> None:
        message = message.repaired()
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
            return
        if not allowed:
            await self._refuse(message, allowlist)
            return
        # Adapters receive before the pending messages of the last run are dispatched; one
        # recorded in that window may be among them, and must be dispatched only once.
        await self._resumed.wait()
        if (message.platform, message.platform_message_id) in self._resumed_ids:
            return
        self._dispatch(message)

    def _may_talk(self, message: InboundMessage, allowlist: Allowlist) -> bool:
        """Admins always; else an admin's run-time decision; else the config's allowlist."""
        if self._is_admin(message):
            return True
        decision = self.access.decision(message.platform, message.user_id, message.username)
        if decision is not None:
            return decision == "allow"
        return allowlist.allows(message.user_id, message.username)

    async def _may_run_job(self, run: InboundMessage) -> bool:
        """Whether a job's owner may still talk to the bot (a job's run is their message)."""
        await self.access.refresh_if_stale()
        return self._may_talk(run, self.allowlists[run.platform])

    def _dispatch(self, message: InboundMessage) -> None:
        command = message.command
        spec = self.commands.resolve(command) if command is not None else None
        if command is not None and spec is not None and spec.immediate:
            self._spawn(self._run_command(message, command))  # beside the running turn
            return
        self.workers.submit(message.session_key, message)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

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

    # -- handling --------------------------------------------------------------------------

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

    async def _handle_batch(self, key: str, batch: list[InboundMessage]) -> None:
        """One worker step: what the last run left unfinished first, then the new turn."""
        if not any((m.platform, m.platform_message_id) in self._resumed_ids for m in batch):
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
        spans = self.app.services.spans
        attached = [kind for message in batch for kind in message.attachments]
        is_admin = self._is_admin(batch[-1])
        address = _address(batch[-1], is_admin)
        with spans.span("receive", {"hermes.attachments": len(attached)}):
            refusal = await self.budget.refusal(address.user_key, is_admin=is_admin)
            if refusal is not None:  # over a spending limit: no model call
                if is_job_run(batch[-1].platform_message_id):
                    refusal = over_budget_notice(batch[-1], refusal)
                await self.delivery.deliver(batch, [refusal])
                return
            adapter = self.adapters[first.platform]
            runtime = await self.app.sessions.get(address)  # the message's one lookup
            media = PreparedMedia()
            if stored_message_id is None:  # a resumed turn's content is stored already
                media = await self.media.prepare(
                    batch, adapter.fetch_file, first.platform, runtime.model.info
                )
                if not any(message.text for message in batch) and not media.parts:
                    # Nothing the model could read: say so (or what the bot can do for a bare
                    # mention) instead of staying silent.
                    await self.delivery.deliver(batch, self._nothing_to_read(media, attached))
                    return
        notices = [*media.notices, *([unread_attachment_notice(attached)] if attached else [])]
        ids = tuple(m.platform_message_id for m in batch)
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
                    approvals=self._turn_approvals(batch[-1]),
                )
        except asyncio.CancelledError:
            if key in self._stopping_keys:
                await self._after_user_stop(runtime, batch)
            raise
        notices.extend(reply.notices)
        # A reply shown live is already in the chat, above anything sent now.
        streamed = live is not None and bool(live.messages)
        texts = [reply.text, *notices] if streamed else [*notices, reply.text]
        with spans.span("delivery", {"hermes.parts": len(texts)}):
            await self.delivery.deliver(batch, texts)
        waited = reply.result.wait_seconds if reply.result else 0.0
        took = time.perf_counter() - started
        self.overhead_ms.append((took - waited) * 1000)
        self.metrics.turn_seconds.labels(first.platform).observe(took)
        self.metrics.model_seconds.labels(first.platform).observe(waited)

    def _turn_approvals(self, message: InboundMessage) -> ApprovalPort:
        """The turn's approval prompts: in its chat, answered by its writer or an admin."""
        admins = self.admins.get(message.platform)

        def may_answer(user_id: str, username: str | None) -> bool:
            if user_id == message.user_id:
                return True
            return admins is not None and admins.matches(user_id, username)

        return self.approvals.for_turn(message.platform, DeliveryTarget.of(message), may_answer)

    def _nothing_to_read(self, media: PreparedMedia, attached: list[str]) -> list[str]:
        """The answer to a turn with nothing for the model: what could not be read, or, for a
        message with nothing at all in it (a bare mention), what the bot can do."""
        if media.notices or attached:
            return media.replies_instead(attached, self.media.readable_text())
        return [empty_message_reply(self.media.readable_text())]

    async def _after_user_stop(self, runtime: SessionRuntime, batch: list[InboundMessage]) -> None:
        """A turn cancelled by /stop: reload the context from the store, close the messages."""
        await runtime.agent.after_stop()
        for message in batch:
            await self.repo.mark_inbound(message.platform, message.platform_message_id, "done")

    async def _run_command(self, message: InboundMessage, command: Command) -> None:
        """A command (known or not) answered in the chat; it never reaches the model."""
        context = CommandContext(
            self.app.sessions,
            _address(message, self._is_admin(message)),
            command.argument,
            self._is_admin(message),
            self,
            self.commands,
        )
        try:
            text = await self.commands.run(command, context)
        except Exception as exc:
            log.exception("session %s: /%s failed", message.session_key, command.name)
            text = FAILED_TEXT.format(error=type(exc).__name__)
        await self.delivery.deliver([message], [text])

    def _is_admin(self, message: InboundMessage) -> bool:
        admins = self.admins.get(message.platform)
        return admins is not None and admins.matches(message.user_id, message.username)

    async def access_changed(self) -> None:
        """An admin allowed or denied someone: their next message is decided by it."""
        await self.access.refresh()

    async def health_text(self) -> str:
        """The daemon's own health, for an admin's ``/status``."""
        failures = {adapter.name: adapter.failure for adapter in self.adapters.values()}
        return health_text(await self.repo.count_dead_letters(), failures)

    # -- idleness --------------------------------------------------------------------------

    async def wait_idle(self, timeout: float = IDLE_WAIT_SECONDS) -> None:  # noqa: ASYNC109
        """Return once the gateway has nothing left to do with what it has received.

        Idle means, all at once: no message being recorded (:meth:`receive`), no session with
        work queued or a batch running, no reply being delivered, no task of its own (an
        immediate command) running, and no message of a running adapter unfinished in the
        inbound table. Tests wait for it before asserting that nothing more happened; it
        knows nothing of updates the platform has not handed over yet. Raises TimeoutError
        after ``timeout`` seconds still busy.
        """
        async with asyncio.timeout(timeout):
            while True:
                await self._receiving.wait_none()
                await self.workers.wait_idle()
                await self.delivery.in_flight.wait_none()
                running = {task for task in self._background if not task.done()}
                if running:
                    await asyncio.wait(running)
                if self._busy():
                    continue
                unsettled = await self._unsettled_inbound()
                if self._busy():
                    continue  # something started while the table was read: look again
                if not unsettled:
                    return
                await asyncio.sleep(UNSETTLED_RECHECK_SECONDS)

    def _busy(self) -> bool:
        """Whether anything of the gateway runs now (the in-memory half of :meth:`wait_idle`)."""
        return (
            self._receiving.count > 0
            or not self.workers.idle
            or self.delivery.in_flight.count > 0
            or any(not task.done() for task in self._background)
        )

    async def _unsettled_inbound(self) -> list[InboundRecord]:
        """Messages of the running adapters recorded but not finished (pending or processing)."""
        unsettled: list[InboundRecord] = []
        for name, adapter in self.adapters.items():
            if adapter.failure is None:  # a stopped adapter's messages wait for the next start
                unsettled.extend(await self.repo.pending_inbound(name))
        return unsettled
