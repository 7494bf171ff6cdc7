"""The gateway daemon's lifecycle: adapters in, admission, the turn runner, replies out.

:class:`Gateway` wires the enabled platform adapters to its three parts, each passed once by a
message: :meth:`Gateway.receive` hands it to admission (:mod:`gateway.runtime.admission`:
recorded durably before the adapter acknowledges it, duplicates dropped, strangers refused),
then to the turn runner (:mod:`gateway.runtime.turns`: commands, batches, one agent turn per
batch, the reply delivered exactly once). The daemon itself starts and stops the adapters,
resumes what the last run left pending (:mod:`gateway.runtime.resume`), waits for idleness
(:mod:`gateway.runtime.idle`), reports its health and prunes quarantined updates
(:mod:`gateway.runtime.housekeeping`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from datetime import UTC, datetime

from gateway.commands import CommandRegistry, default_registry
from gateway.commands.builtin import STOPPED_TEXT as STOPPED_TEXT  # re-exported
from gateway.delivery.approvals import ApprovalDesk
from gateway.delivery.deliverer import Deliverer, RetryPolicy
from gateway.delivery.in_flight import InFlight
from gateway.delivery.voice import build_voice_replies
from gateway.jobs.scheduler import JobScheduler
from gateway.messages.inbound import InboundMessage
from gateway.messages.turn_text import MESSAGE_SEPARATOR as MESSAGE_SEPARATOR
from gateway.platforms.base import AdapterHooks, ApprovalPress, PlatformAuthError
from gateway.platforms.registry import PLATFORMS
from gateway.reports.failover import failover_lines
from gateway.reports.totals import health_text
from gateway.runtime.admission import Admission
from gateway.runtime.app import App
from gateway.runtime.election import Election
from gateway.runtime.housekeeping import prune_dead_letters, prune_dead_letters_daily
from gateway.runtime.idle import IdleWatch
from gateway.runtime.metrics import DaemonMetrics
from gateway.runtime.resume import pending_messages
from gateway.runtime.turns import FAILED_TEXT as FAILED_TEXT  # re-exported
from gateway.runtime.turns import TurnRunner
from gateway.runtime.webhook_inbox import take_kept_updates
from gateway.runtime.workers import DEFAULT_HOLD_SECONDS, DEFAULT_IDLE_SECONDS, SessionWorkers
from gateway.store.ports import LifecycleStore

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 20.0
"""How long in-flight turns get to finish on SIGINT/SIGTERM; unfinished ones stay pending."""
IDLE_WAIT_SECONDS = 30.0
"""How long :meth:`Gateway.wait_idle` waits by default before it gives up (TimeoutError)."""


class Gateway:
    """The running daemon, usable in-process (tests, demo, benchmarks)."""

    def __init__(
        self,
        app: App,
        *,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        hold_seconds: float = DEFAULT_HOLD_SECONDS,
        commands: CommandRegistry | None = None,
        election: Election | None = None,
    ) -> None:
        self.app = app
        self.election = election
        """Failover: this gateway's standing in the election (None: failover is off). Its
        send gate is handed to every adapter."""
        self.repo: LifecycleStore = app.repo
        """What the lifecycle itself reads and writes of the store (pending messages, dead
        letters); the repository is handed whole only to the parts it builds, each typed with
        its own port (:mod:`gateway.store.ports`)."""
        self.commands = commands or default_registry()
        adapters = PLATFORMS.build_adapters(app.config, self._hooks)
        self.adapters = {adapter.name: adapter for adapter in adapters}
        self.admission = Admission(app.config, app.repo, app.repo, self.adapters)
        """Who may talk, refusals, who may answer an approval."""
        self.metrics = DaemonMetrics()
        """Latencies, levels and retries only the running daemon knows (``/metrics``)."""
        self.delivery = Deliverer(
            app.repo,
            self.adapters,
            RetryPolicy.from_settings(app.config.gateway),
            on_retry=self.metrics.retried,
            voice=build_voice_replies(app.config.tts, app.config.media, app.repo),
        )
        self._started_at = datetime.now(UTC)
        """Approval prompts sent before this are a previous run's (closed at start)."""
        self.approvals = ApprovalDesk(
            app.repo, self.adapters, lambda: app.config.mcp.approval_timeout_seconds
        )
        """Approval prompts waiting for a press (tools in an MCP server's ``ask`` list)."""
        self.turns = TurnRunner(
            app,
            app.repo,
            self.adapters,
            self.admission,
            self.delivery,
            self.approvals,
            self.commands,
            self.metrics,
            self,
            idle_seconds=idle_seconds,
            hold_seconds=hold_seconds,
        )
        """Commands, batches and turns of what admission let through."""
        self.metrics.watch(
            queue_depth=lambda: self.turns.workers.queued_count,
            live_sessions=lambda: app.sessions.loaded_count,
        )
        self._housekeeping: asyncio.Task[None] | None = None
        """The daily pruning of quarantined updates (not work anyone waits for)."""
        self._receiving = InFlight()
        """Messages being admitted and dispatched by :meth:`receive` now."""
        self._resumed = asyncio.Event()
        """Set once what the last run left pending is dispatched; live messages wait for it."""
        self._idle = IdleWatch(
            self._receiving, self.turns, self.delivery.in_flight, self.adapters, self.repo
        )
        self.identities: dict[str, str] = {}
        """Who each adapter that started is connected as (``@name``)."""
        self.no_adapter_left = asyncio.Event()
        """Set when every adapter has stopped for good: the daemon has nothing left to do."""
        self.scheduler = self._job_scheduler()
        """Runs scheduled jobs as turns (None: ``jobs.enabled`` is off)."""
        self._scheduling: asyncio.Task[None] | None = None
        self._inbox_tasks: list[asyncio.Task[None]] = []
        """Failover: the loops taking in webhook updates standbys kept."""

    def _job_scheduler(self) -> JobScheduler | None:
        """Scheduled jobs' runs, admitted and dispatched as messages (None: jobs are off)."""
        board = self.app.services.jobs
        if board is None:
            return None
        return JobScheduler(board, self.adapters, self.turns.dispatch, self.admission.may_run_job)

    @property
    def workers(self) -> SessionWorkers[InboundMessage]:
        """The sessions' workers (tests and benchmarks watch them)."""
        return self.turns.workers

    @property
    def overhead_ms(self) -> deque[float]:
        """Per handled turn: time in the gateway and agent minus time waiting on the model."""
        return self.turns.overhead_ms

    def _hooks(self, platform: str) -> AdapterHooks:
        """What each adapter is built with: the dead-letter table, the daemon's failure
        handling, the commands, and where its catch-up starts."""
        return AdapterHooks(
            quarantine=self.repo.add_dead_letter,
            on_fatal=self._adapter_failed,
            commands=self.commands,
            catch_up_from=functools.partial(self._catch_up_start, platform),
            on_approval=self._on_approval,
            send_gate=self.election.check_may_send if self.election is not None else None,
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
            await self.admission.start()
            for name, adapter in self.adapters.items():
                if adapter.failure is None:  # before resumed turns post prompts of their own
                    await self.approvals.close_stale(name, self._started_at)
            await self.resume_pending()
            days = self.app.config.gateway.dead_letter_days
            self._housekeeping = asyncio.create_task(prune_dead_letters_daily(self.repo, days))
            if self.scheduler is not None:  # after the resume: a claimed run is resumed once
                self._scheduling = asyncio.create_task(self.scheduler.run())
            self._take_kept_updates()
        finally:
            # Even a failed start must not leave live messages waiting forever.
            self._resumed.set()

    def _take_kept_updates(self) -> None:
        """Failover: take in the webhook updates standbys received, for each adapter that
        runs in webhook mode (see :mod:`gateway.runtime.webhook_inbox`)."""
        if self.election is None:
            return
        for adapter in self.adapters.values():
            if adapter.webhook_mode and adapter.failure is None:
                task = asyncio.create_task(take_kept_updates(self.app.repo, adapter))
                self._inbox_tasks.append(task)

    async def prune_dead_letters(self) -> int:
        """Delete quarantined updates older than ``gateway.dead_letter_days``."""
        return await prune_dead_letters(self.repo, self.app.config.gateway.dead_letter_days)

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
        for task in self._inbox_tasks:
            task.cancel()
        for adapter in self.adapters.values():
            await adapter.stop_receiving()
        if not await self.workers.drain(grace_seconds):
            log.warning("shutdown: turns still running after %.0f s were cancelled", grace_seconds)
        self.turns.cancel_background()
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        for adapter in self.adapters.values():
            await adapter.stop()
        await self.turns.aclose()

    async def resume_pending(self) -> int:
        """Handle messages recorded before a restart but never answered; returns how many."""
        resumed = 0
        for name, adapter in self.adapters.items():
            if adapter.failure is not None:
                continue  # stopped for good (token rejected): they wait for the next start
            for message in await pending_messages(self.repo, name):
                self.turns.resume(message)
                resumed += 1
        if resumed:
            log.info("resuming %d message(s) received before the restart", resumed)
        return resumed

    async def receive(self, message: InboundMessage) -> None:
        """The adapters' callback: admission (recorded durably, duplicates dropped, strangers
        refused), then the turn runner. Text no database could store (a lone surrogate, NUL)
        is repaired first."""
        with self._receiving.track():
            message = message.repaired()
            if not await self.admission.admit(message):
                return
            # Adapters receive before the pending messages of the last run are dispatched;
            # one recorded in that window may be among them, and must be dispatched once.
            await self._resumed.wait()
            if not self.turns.was_resumed(message):
                self.turns.dispatch(message)

    # -- what commands ask of the daemon (gateway.commands.CommandHost) --------------------

    async def stop_running(self, key: str) -> bool:
        """``/stop``: cancel the session's running turn and wait for it to clean up."""
        return await self.turns.stop_running(key)

    async def access_changed(self) -> None:
        """An admin allowed or denied someone: their next message is decided by it."""
        await self.admission.access_changed()

    async def health_text(self) -> str:
        """The daemon's own health, for an admin's ``/status``."""
        failures = {adapter.name: adapter.failure for adapter in self.adapters.values()}
        text = health_text(await self.repo.count_dead_letters(), failures)
        if self.election is None:
            return text
        return "\n".join([text, *failover_lines(await self.repo.failover_state())])

    # -- idleness --------------------------------------------------------------------------

    async def wait_idle(self, timeout: float = IDLE_WAIT_SECONDS) -> None:  # noqa: ASYNC109
        """Return once the gateway has nothing left to do with what it has received
        (:class:`~gateway.runtime.idle.IdleWatch`); TimeoutError after ``timeout`` s busy."""
        await self._idle.wait(timeout)
