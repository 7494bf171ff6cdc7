"""One replay of a transcript set through the real daemon, under one policy and one window.

Everything of ours runs for real in this process: the
:class:`~gateway.runtime.gateway.Gateway` with the real python-telegram-bot client polling the
Telegram emulator, session workers, the agent loop, compaction and a SQLite store in a temporary
directory. The model is the Anthropic emulator, whose cache accounting runs on a clock set to each
message's transcript time before it is sent (the message also carries that time as its Telegram
``date``), and whose replies are scripted (:mod:`bench.overnight_model`).

Messages are sent one at a time in time order over all conversations. After each reply the
replay waits until the daemon is quiet (the session's turn closed, no model request running,
e.g. a compaction in the background), as it would be 20 s later when the next message comes;
then the clock moves to the next message's time. Each request the emulator answered is
attributed to the message in flight when it arrived.

A tool-heavy set (:mod:`bench.tool_transcripts`) runs the workbench MCP server
(:mod:`sandbox.mcp_workbench`) as the daemon's stdio child, configured as a user would, and the
scripted model calls its tools step by step before each reply: every result passes through the
real MCP client, the daemon's result handling and its context machinery.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.gateway_load import MODEL_KEY_ENV, TELEGRAM_TOKEN_ENV
from bench.overnight_costs import CostBreakdown, breakdown, is_summary
from bench.overnight_model import ScriptedModel, summary_references
from bench.tool_transcripts import world
from bench.transcripts import WORKBENCH, TranscriptSet, Turn
from gateway.config.schema import parse_config
from gateway.runtime.app import App, open_app
from gateway.runtime.gateway import Gateway
from gateway.store.db import default_database_url
from gateway.store.records import CompactionRecord
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.anthropic_records import TrafficTotals
from sandbox.telegram_api import TelegramEmulator

MAIN_MODEL = "claude-sonnet-4-5"
FIRST_CHAT_ID = 20_000
"""Telegram chat (and user) id of conversation 0; the others follow."""
PLATFORM = "telegram"
POLL_TIMEOUT_SECONDS = 10
REPLY_TIMEOUT_SECONDS = 90.0
"""How long one message may wait for its reply before it counts as lost (a blocking
compaction with a slow summary model included)."""
SETTLE_POLL_SECONDS = 0.002
FAILED_CHECK_SECONDS = 1.0
"""While waiting for a reply, how often the replay asks whether the message ended failed."""
REPLY_PREFIX_CHARS = 40
"""A sent message starting like the scripted reply is the reply (the rest are notices)."""
STOP_GRACE_SECONDS = 10.0
TOO_LONG_PREFIX = "prompt is too long"
CHECKOUT = Path(__file__).resolve().parents[1]
"""Where ``python -m sandbox.mcp_workbench`` runs (the emulators are not installed)."""
MCP_READY_SECONDS = 60.0


@dataclass(frozen=True)
class PolicyRun:
    """What one replay runs: a policy's name, the window, and its config overrides."""

    policy: str
    window: int
    overrides: dict[str, Any]


@dataclass
class ClearingTally:
    """Clearings of used tool outputs inside tool loops: how many, the tokens they took out,
    and the policy's estimates (reads saved over the requests left, the cache rewrite)."""

    count: int = 0
    cleared_tokens: int = 0
    saving_usd: float = 0.0
    cost_usd: float = 0.0

    def add(self, compaction: CompactionRecord) -> None:
        """Count one clearing stored with its estimate."""
        self.count += 1
        self.cleared_tokens += compaction.tokens_before - compaction.tokens_after
        self.saving_usd += compaction.estimated_saving_usd or 0.0
        self.cost_usd += compaction.estimated_cost_usd or 0.0

    def describe(self) -> str:
        """One clearing on average: tokens out, its rewrite's cost and the reads it saves."""
        if not self.count:
            return "no clearing inside a tool loop"
        n = self.count
        return (
            f"{n} clearings inside tool loops, each ~{self.cleared_tokens // n:,} tokens out, "
            f"~${self.cost_usd / n:.4f} of cache rewrite for ~${self.saving_usd / n:.4f} of "
            f"reads saved (the policy's estimates)"
        )


@dataclass
class ReplayResult:
    """What one replay measured and every way it fell short."""

    run: PolicyRun
    turns: int = 0
    visits: int = 0
    costs: CostBreakdown = field(default_factory=CostBreakdown)
    answered: int = 0
    notices: int = 0
    requests: int = 0
    invalid_requests: int = 0
    """Requests the emulator refused with a 400 (over-window prompts included)."""
    over_window: int = 0
    largest_prompt: int = 0
    """The largest prompt the model was sent (tokens: uncached, cache reads and writes)."""
    tool_calls: int = 0
    """Tool calls the model made (page reads of shortened results included)."""
    page_reads: int = 0
    summary_requests: int = 0
    summary_models: set[str] = field(default_factory=set)
    summaries_without_previous: int = 0
    """Summary requests without the newest summary applied before them (not an update)."""
    tokens_by_model: dict[str, TrafficTotals] = field(default_factory=dict)
    """The emulator's own token totals per model (answered requests)."""
    compactions: Counter[str] = field(default_factory=Counter)
    """Stored compactions by ``trigger/outcome``."""
    clearings: ClearingTally = field(default_factory=lambda: ClearingTally())
    """The clearings inside tool loops, with what the policy expected of them."""
    compaction_waits: list[float] = field(default_factory=list)
    """Seconds to the reply, for messages during whose turn a summary was requested."""
    waits: list[float] = field(default_factory=list)
    """Seconds to the reply, for every message."""
    wall_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        """Messages without their reply, or not stored as they were sent."""
        return sum(1 for problem in self.problems if problem.startswith("lost"))


def replay_config(
    home: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    system_prompt: str,
    run: PolicyRun,
    world_file: Path | None = None,
) -> dict[str, Any]:
    """The daemon's config for one replay (before parsing), the policy's overrides merged;
    with ``world_file``, the workbench MCP server serving it."""
    config: dict[str, Any] = {
        "model": {
            "name": MAIN_MODEL,
            "base_url": anthropic.base_url,
            "api_key_env": MODEL_KEY_ENV,
            "context_length": run.window,
            "max_retries": 0,
        },
        "database": {"url": default_database_url(home)},
        "agent": {"system_prompt": system_prompt},
        "platforms": {
            "telegram": {
                "enabled": True,
                "token_env": TELEGRAM_TOKEN_ENV,
                "base_url": telegram.base_url,
                "base_file_url": telegram.base_file_url,
                "allow_all": True,
                "poll_timeout": POLL_TIMEOUT_SECONDS,
                "rate_limit_per_second": 0,
                "rate_limit_per_group_per_minute": 0,
                "typing_delay": REPLY_TIMEOUT_SECONDS,
            }
        },
        "logging": {"level": "WARNING"},
    }
    if world_file is not None:
        config["mcp"] = {
            "servers": {
                WORKBENCH: {
                    "command": sys.executable,
                    "args": ["-m", "sandbox.mcp_workbench", str(world_file)],
                    "cwd": str(CHECKOUT),
                }
            }
        }
    return merge(config, run.overrides)


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, section by section (neither is changed)."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class _Replayer:
    """The replay of one run: sends each message, waits for its reply and for quiet."""

    def __init__(
        self,
        gateway: Gateway,
        telegram: TelegramEmulator,
        anthropic: AnthropicEmulator,
        model: ScriptedModel,
        result: ReplayResult,
    ) -> None:
        self.gateway = gateway
        self.telegram = telegram
        self.anthropic = anthropic
        self.model = model
        self.result = result
        self.pushed: dict[int, list[int]] = {}
        self.request_at_visit_start: list[bool] = []

    async def send(self, turn: Turn) -> None:
        """One message: clock to its time, push, wait for the reply, then for quiet."""
        chat_id = FIRST_CHAT_ID + turn.conversation
        self._attribute_requests(previous_visit_start=None)
        self.model.expect(turn.conversation, turn.reply, turn=turn.index, steps=turn.steps)
        self.anthropic.clock.advance_to(turn.sent_at)
        summaries_before = len(self.model.summaries.requests)
        seen = len(self.telegram.sent_messages(chat_id))
        started = time.perf_counter()
        update = self.telegram.push_message(chat_id, turn.text, date=turn.sent_at)
        self.pushed.setdefault(chat_id, []).append(update["message"]["message_id"])
        message_id = update["message"]["message_id"]
        answered = await self._wait_for_reply(chat_id, seen, turn, message_id)
        waited = time.perf_counter() - started
        self.result.waits.append(waited)
        if len(self.model.summaries.requests) > summaries_before:
            self.result.compaction_waits.append(waited)
        if answered:
            self.result.answered += 1
        await self._settle(f"{PLATFORM}:{chat_id}")
        self._attribute_requests(previous_visit_start=turn.visit_start)

    def _attribute_requests(self, previous_visit_start: bool | None) -> None:
        """Requests that arrived since the last call belong to the message just handled."""
        arrived = len(self.anthropic.requests) - len(self.request_at_visit_start)
        self.request_at_visit_start += [bool(previous_visit_start)] * arrived

    async def _wait_for_reply(self, chat_id: int, seen: int, turn: Turn, message_id: int) -> bool:
        expected = turn.reply[:REPLY_PREFIX_CHARS]
        deadline = time.monotonic() + REPLY_TIMEOUT_SECONDS
        ended_at = float("inf")
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                sent = await self.telegram.wait_for_sent(
                    chat_id, seen + 1, timeout=min(remaining, FAILED_CHECK_SECONDS)
                )
            except TimeoutError:
                if await self._ended(chat_id, message_id):
                    # Ended without the reply (a failure or an error text): one more check
                    # interval for a reply still in delivery, then it is lost.
                    ended_at = min(ended_at, time.monotonic())
                    if time.monotonic() - ended_at >= FAILED_CHECK_SECONDS:
                        break
                continue
            for message in sent[seen:]:
                if str(message.get("text", "")).startswith(expected):
                    return True
                self.result.notices += 1
            seen = len(sent)
        self.result.problems.append(
            f"lost: conversation {turn.conversation} message {turn.index} got no reply"
        )
        return False

    async def _ended(self, chat_id: int, message_id: int) -> bool:
        """Whether the daemon is done with the message (answered, or failed with a notice)."""
        record = await self.gateway.app.repo.get_inbound(PLATFORM, f"{chat_id}:{message_id}")
        return record is not None and record.status in ("done", "failed")

    async def _settle(self, key: str) -> None:
        """Wait until the session's turn is closed and no model request is running."""
        while True:
            # The workers offer no event to wait on; the poll is short and only a benchmark's.
            while self.gateway.workers.is_running(key):  # noqa: ASYNC110
                await asyncio.sleep(SETTLE_POLL_SECONDS)
            await self.model.settled()
            await asyncio.sleep(SETTLE_POLL_SECONDS)  # a background request on its way
            if not self.gateway.workers.is_running(key) and not self.model.in_flight:
                return


async def check_store(
    app: App, pushed: dict[int, list[int]], result: ReplayResult
) -> set[tuple[int, int]]:
    """Every message is closed and stored once, in order; count the stored compactions.

    Returns the references of the summaries the compactions applied.
    """
    repo = app.repo
    applied: set[tuple[int, int]] = set()
    for chat_id, message_ids in pushed.items():
        key = f"{PLATFORM}:{chat_id}"
        for message_id in message_ids:
            record = await repo.get_inbound(PLATFORM, f"{chat_id}:{message_id}")
            if record is None or record.status != "done":
                status = record.status if record else "missing"
                result.problems.append(f"lost: {key} inbound {message_id} is {status}")
        sessions = await repo.list_sessions(key=key)
        if len(sessions) != 1:
            result.problems.append(f"lost: {len(sessions)} sessions stored for {key}")
            continue
        stored = await repo.all_messages(sessions[0].id)
        # A compaction stores the messages it keeps again, under their platform ids, and its
        # summary as a user message of no platform.
        sources = list(
            dict.fromkeys(
                m.platform_message_id
                for m in stored
                if m.role == "user" and m.platform_message_id is not None
            )
        )
        if sources != [f"{chat_id}:{message_id}" for message_id in message_ids]:
            result.problems.append(f"lost: {key} stores {len(sources)} of {len(message_ids)}")
        for compaction in await repo.list_compactions(sessions[0].id):
            result.compactions[f"{compaction.trigger}/{compaction.outcome}"] += 1
            if compaction.trigger == "prune" and compaction.estimated_cost_usd is not None:
                result.clearings.add(compaction)
            if compaction.summary_message_id is not None:  # the summary went into the context
                applied |= summary_references(compaction.summary or "")
    return applied


def _count_requests(anthropic: AnthropicEmulator, result: ReplayResult) -> None:
    result.requests = len(anthropic.requests)
    for record in anthropic.requests:
        usage = record.usage or {}
        prompt = sum(
            int(usage.get(key, 0))
            for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        result.largest_prompt = max(result.largest_prompt, prompt)
        if is_summary(record, MAIN_MODEL):
            result.summary_models.add(record.model)
        if record.status == 400:
            result.invalid_requests += 1
            if (record.error_message or "").startswith(TOO_LONG_PREFIX):
                result.over_window += 1
        elif record.status != 200:
            result.problems.append(f"model request failed: {record.status} {record.error_type}")


def _world_file(home: Path, transcripts: TranscriptSet) -> Path | None:
    """The workbench server's world, written to ``home`` (None: the set calls no tools)."""
    if not any(turn.steps for turn in transcripts.timeline):
        return None
    path = home / "workbench-world.json"
    path.write_text(json.dumps(world(transcripts)))
    return path


async def _tools_ready(app: App) -> None:
    """Wait until every MCP server listed its tools (a replay starts with the tools offered)."""
    for provider in app.services.tool_providers:
        await asyncio.wait_for(provider.connection.wait_connected(), MCP_READY_SECONDS)


async def replay(
    transcripts: TranscriptSet,
    run: PolicyRun,
    *,
    summary_delay: float = 0.0,
    conversations: int | None = None,
) -> ReplayResult:
    """Replay the set (its first ``conversations`` only, when given) and measure it."""
    timeline = [
        turn
        for turn in transcripts.timeline
        if conversations is None or turn.conversation < conversations
    ]
    result = ReplayResult(run, turns=len(timeline), visits=sum(t.visit_start for t in timeline))
    model = ScriptedModel(summary_delay=summary_delay)
    started = time.perf_counter()
    async with (
        TelegramEmulator() as telegram,
        AnthropicEmulator(context_length=run.window, reply_fn=model, record_bodies=False) as api,
    ):
        # Secrets reach the daemon through the environment only, as in production.
        os.environ[TELEGRAM_TOKEN_ENV] = telegram.token
        os.environ[MODEL_KEY_ENV] = "bench-key"
        with tempfile.TemporaryDirectory(prefix="hermes-overnight-") as home:
            world_file = _world_file(Path(home), transcripts)
            raw = replay_config(
                Path(home), telegram, api, transcripts.system_prompt, run, world_file
            )
            async with open_app(parse_config(raw), with_tools=world_file is not None) as app:
                await _tools_ready(app)
                gateway = Gateway(app)
                await gateway.start()
                replayer = _Replayer(gateway, telegram, api, model, result)
                try:
                    for turn in timeline:
                        await replayer.send(turn)
                finally:
                    await gateway.stop(grace_seconds=STOP_GRACE_SECONDS)
                applied = await check_store(app, replayer.pushed, result)
        replayer._attribute_requests(previous_visit_start=None)
        _count_requests(api, result)
        result.tokens_by_model = dict(api.stats.by_model)
        result.costs = breakdown(api.requests, replayer.request_at_visit_start, MAIN_MODEL)
    result.summary_requests = len(model.summaries.requests)
    result.tool_calls, result.page_reads = model.tool_uses, model.page_reads
    result.summaries_without_previous = model.summaries.missing_previous(applied)
    result.wall_seconds = time.perf_counter() - started
    return result
