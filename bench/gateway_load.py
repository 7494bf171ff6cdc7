"""Benchmark: N private chats x M messages through the whole gateway, each answered exactly once.

Everything of ours is real and in-process: the :class:`~gateway.run.Gateway` with the real
python-telegram-bot client polling the Telegram emulator, session workers, the agent loop and
the SQLite store in a temporary directory. The model is the Anthropic emulator answering at
once, so what is measured is the gateway's own cost (the emulators share the process and its
event loop, so their CPU counts too). Each chat writes like a person (the next message only
after the reply to the previous one); all chats write at the same time.

Prints messages/s (answered messages over the wall time of the sending phase), p50/p95 reply
latency, the gateway's own p50/p95 overhead per turn and the peak RSS; exits 1 when any message
was not answered exactly once.

    python -m bench.gateway_load --chats 100 --messages 20
    python -m bench.gateway_load --chats 100 --messages 20 --telegram-rate-limit 30
    python -m bench.gateway_load --chats 100 --messages 20 --profile /tmp/load.pstats
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gateway.app import App, open_app
from gateway.config import Config, parse_config
from gateway.run import Gateway
from gateway.store.db import default_database_url
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator

PLATFORM = "telegram"
MODEL_KEY_ENV = "HERMES_BENCH_MODEL_KEY"
TELEGRAM_TOKEN_ENV = "HERMES_BENCH_TELEGRAM_TOKEN"
FIRST_CHAT_ID = 10_000
"""Chat (and user) id of the first benchmark chat; the others follow."""
DEFAULT_CHATS = 100
DEFAULT_MESSAGES = 20
DEFAULT_RATE_LIMIT_PER_SECOND = 0.0
"""Outgoing Telegram requests/s; 0 lifts the limit. The emulator does not enforce Telegram's
flood limits (about 30 messages/s overall), so by default the gateway is measured without them."""
TARGET_MESSAGES_PER_SECOND = 100.0
"""The acceptance target on 2 cores."""
REPLY_TIMEOUT_SECONDS = 60.0
"""How long one chat waits for one reply before counting the message as unanswered."""
WATCH_INTERVAL_SECONDS = 0.002
"""How often the reply watcher looks at what the bot sent (bounds latency resolution)."""
DUPLICATE_GRACE_SECONDS = 0.5
"""Quiet time after the last reply in which a wrong second answer would still show up."""
STOP_GRACE_SECONDS = 10.0
POLL_TIMEOUT_SECONDS = 10
BYTES_PER_MIB = 1024 * 1024
RU_MAXRSS_UNIT_BYTES = 1 if sys.platform == "darwin" else 1024  # Linux reports KiB


@dataclass
class LoadResult:
    """What one run measured and every way it fell short of exactly-once handling."""

    chats: int
    messages_per_chat: int
    rate_limit_per_second: float = DEFAULT_RATE_LIMIT_PER_SECOND
    answered: int = 0
    sending_seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    overhead_ms: list[float] = field(default_factory=list)
    model_requests: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def expected(self) -> int:
        """Messages sent in total."""
        return self.chats * self.messages_per_chat

    @property
    def messages_per_second(self) -> float:
        """Answered messages over the wall time of the sending phase."""
        return self.answered / self.sending_seconds if self.sending_seconds else 0.0


class ReplyWatcher:
    """Tells each chat when its next reply arrived, watching the emulator in one task.

    One watcher instead of one ``wait_for_sent`` per chat: a hundred waiters woken on every API
    call would make the benchmark's own bookkeeping the bottleneck.
    """

    def __init__(self, telegram: TelegramEmulator) -> None:
        self._telegram = telegram
        self._seen = 0
        self.counts: defaultdict[int, int] = defaultdict(int)
        self._changed: defaultdict[int, asyncio.Event] = defaultdict(asyncio.Event)

    async def run(self) -> None:
        """Watch until cancelled."""
        while True:
            self.poll()
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)

    def poll(self) -> None:
        """Count replies sent since the last look and wake the chats that got one."""
        sent = self._telegram.sent_messages()
        for message in sent[self._seen :]:
            chat_id = message["chat_id"]
            self.counts[chat_id] += 1
            self._changed[chat_id].set()
        self._seen = len(sent)

    async def wait_for(self, chat_id: int, count: int) -> None:
        """Return once ``chat_id`` has received at least ``count`` replies."""
        while self.counts[chat_id] < count:
            event = self._changed[chat_id]
            event.clear()
            await event.wait()


def load_config(
    home: Path,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    *,
    rate_limit_per_second: float = DEFAULT_RATE_LIMIT_PER_SECOND,
) -> Config:
    """A config pointing at the emulators and a SQLite file under ``home``."""
    return parse_config(
        {
            "model": {
                "base_url": anthropic.base_url,
                "api_key_env": MODEL_KEY_ENV,
                "max_retries": 0,
            },
            "database": {"url": default_database_url(home)},
            "platforms": {
                "telegram": {
                    "enabled": True,
                    "token_env": TELEGRAM_TOKEN_ENV,
                    "base_url": telegram.base_url,
                    "base_file_url": telegram.base_file_url,
                    "allow_all": True,
                    "poll_timeout": POLL_TIMEOUT_SECONDS,
                    "rate_limit_per_second": rate_limit_per_second,
                }
            },
            "logging": {"level": "WARNING"},
        }
    )


def message_text(chat_id: int, index: int) -> str:
    """A message whose marker comes back in the emulated model's reply ("Noted: ...")."""
    return f"chat {chat_id} message {index} about the weather"


def reply_marker(chat_id: int, index: int) -> str:
    """What the reply to message ``index`` of ``chat_id`` contains."""
    return f"chat {chat_id} message {index} "


async def _chat(
    chat_id: int,
    messages: int,
    telegram: TelegramEmulator,
    watcher: ReplyWatcher,
    result: LoadResult,
    pushed: dict[int, list[int]],
) -> None:
    """One person: write, wait for the answer, write again."""
    for index in range(messages):
        update = telegram.push_message(chat_id, message_text(chat_id, index), user_id=chat_id)
        pushed[chat_id].append(update["message"]["message_id"])
        started = time.perf_counter()
        try:
            async with asyncio.timeout(REPLY_TIMEOUT_SECONDS):
                await watcher.wait_for(chat_id, index + 1)
        except TimeoutError:
            result.problems.append(f"chat {chat_id}: no reply to message {index}")
            return
        result.latencies_ms.append((time.perf_counter() - started) * 1000)


async def _send_all(
    chats: list[int], messages: int, telegram: TelegramEmulator, result: LoadResult
) -> dict[int, list[int]]:
    """The sending phase; returns the message ids pushed per chat."""
    watcher = ReplyWatcher(telegram)
    watching = asyncio.create_task(watcher.run())
    pushed: dict[int, list[int]] = {chat_id: [] for chat_id in chats}
    started = time.perf_counter()
    try:
        await asyncio.gather(
            *(_chat(chat_id, messages, telegram, watcher, result, pushed) for chat_id in chats)
        )
    finally:
        result.sending_seconds = time.perf_counter() - started
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    result.answered = len(result.latencies_ms)
    return pushed


def check_replies(
    telegram: TelegramEmulator, pushed: dict[int, list[int]], messages: int
) -> list[str]:
    """Every chat got exactly one reply per message, in order, each answering its message."""
    problems = []
    for chat_id in pushed:
        texts = [sent["text"] for sent in telegram.sent_messages(chat_id)]
        if len(texts) != messages:
            problems.append(f"chat {chat_id}: {len(texts)} replies to {messages} messages")
        for index, text in enumerate(texts[:messages]):
            if reply_marker(chat_id, index) not in text:
                problems.append(f"chat {chat_id}: reply {index} does not answer it: {text[:60]!r}")
    return problems


async def check_store(
    app: App, telegram: TelegramEmulator, pushed: dict[int, list[int]], messages: int
) -> list[str]:
    """Every inbound record is done with its one reply; every user message stored once."""
    problems = []
    repo = app.repo
    for chat_id, message_ids in pushed.items():
        reply_ids = [str(sent["message_id"]) for sent in telegram.sent_messages(chat_id)]
        for index, message_id in enumerate(message_ids):
            record = await repo.get_inbound(PLATFORM, f"{chat_id}:{message_id}")
            if record is None or record.status != "done":
                status = record.status if record else "missing"
                problems.append(f"chat {chat_id}: inbound {message_id} is {status}")
            elif list(record.reply_platform_ids) != reply_ids[index : index + 1]:
                problems.append(
                    f"chat {chat_id}: inbound {message_id} replies {record.reply_platform_ids}"
                )
    sessions = await repo.list_sessions(limit=len(pushed) + 1)
    if len(sessions) != len(pushed):
        problems.append(f"{len(sessions)} sessions stored for {len(pushed)} chats")
    for summary in sessions:
        chat_id = int(summary.key.removeprefix(f"{PLATFORM}:"))
        stored = await repo.all_messages(summary.id)
        sources = [m.platform_message_id for m in stored if m.role == "user"]
        expected = [f"{chat_id}:{message_id}" for message_id in pushed.get(chat_id, [])]
        if sources != expected:
            problems.append(f"session {summary.key}: user messages stored from {sources}")
    return problems


async def run_load(
    chats: int, messages: int, *, rate_limit_per_second: float = DEFAULT_RATE_LIMIT_PER_SECOND
) -> LoadResult:
    """Run the whole benchmark and return what it measured and found wrong."""
    result = LoadResult(chats, messages, rate_limit_per_second=rate_limit_per_second)
    chat_ids = [FIRST_CHAT_ID + offset for offset in range(chats)]
    async with (
        TelegramEmulator() as telegram,
        _anthropic_emulator() as anthropic,
    ):
        os.environ[TELEGRAM_TOKEN_ENV] = telegram.token
        os.environ[MODEL_KEY_ENV] = "bench-key"
        with tempfile.TemporaryDirectory(prefix="hermes-load-") as home:
            config = load_config(
                Path(home), telegram, anthropic, rate_limit_per_second=rate_limit_per_second
            )
            async with open_app(config) as app:
                gateway = Gateway(app)
                await gateway.start()
                try:
                    pushed = await _send_all(chat_ids, messages, telegram, result)
                    await asyncio.sleep(DUPLICATE_GRACE_SECONDS)
                finally:
                    await gateway.stop(grace_seconds=STOP_GRACE_SECONDS)
                result.overhead_ms = list(gateway.overhead_ms)
                result.problems += check_replies(telegram, pushed, messages)
                result.problems += await check_store(app, telegram, pushed, messages)
        result.model_requests = len(anthropic.requests)
    if result.model_requests != result.expected:
        result.problems.append(
            f"{result.model_requests} model requests for {result.expected} messages"
        )
    return result


@contextlib.asynccontextmanager
async def _anthropic_emulator() -> AsyncIterator[AnthropicEmulator]:
    """The instant model, keeping no request bodies (a long run would hold every prompt)."""
    emulator = AnthropicEmulator(record_bodies=False)
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) of the samples; zeros when there are none."""
    if not samples:
        return 0.0, 0.0
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, round(len(ordered) * 0.95) - 1)]


def peak_rss_mib() -> float:
    """The process's peak resident set size so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * RU_MAXRSS_UNIT_BYTES / BYTES_PER_MIB


def report(result: LoadResult) -> str:
    """The lines the benchmark prints."""
    latency = percentiles(result.latencies_ms)
    overhead = percentiles(result.overhead_ms)
    verdict = "OK" if not result.problems else f"FAILED ({len(result.problems)} problems)"
    rate = result.messages_per_second
    target = "meets" if rate >= TARGET_MESSAGES_PER_SECOND else "below"
    limit = result.rate_limit_per_second
    limit_text = f"{limit:g} requests/s" if limit else "off"
    lines = [
        f"gateway load: {result.chats} chats x {result.messages_per_chat} messages "
        f"({os.cpu_count()} CPUs, Telegram rate limit {limit_text})",
        f"  answered exactly once: {result.answered}/{result.expected}  {verdict}",
        f"  model requests:        {result.model_requests}",
        f"  throughput:            {rate:.1f} messages/s over {result.sending_seconds:.2f} s "
        f"({target} the {TARGET_MESSAGES_PER_SECOND:.0f}/s target)",
        f"  reply latency:         p50 {latency[0]:.1f} ms  p95 {latency[1]:.1f} ms",
        f"  gateway overhead:      p50 {overhead[0]:.2f} ms  p95 {overhead[1]:.2f} ms "
        f"({len(result.overhead_ms)} turns)",
        f"  peak RSS:              {peak_rss_mib():.1f} MiB",
    ]
    lines += [f"  problem: {problem}" for problem in result.problems[:20]]
    return "\n".join(lines)


@contextlib.contextmanager
def _profiled(path: str | None) -> Iterator[None]:
    """cProfile the run into ``path`` (pstats format) when a path is given."""
    if path is None:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        profiler.dump_stats(path)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=DEFAULT_CHATS)
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument(
        "--telegram-rate-limit",
        type=float,
        default=DEFAULT_RATE_LIMIT_PER_SECOND,
        metavar="PER_SECOND",
        help="outgoing Telegram requests/s as in production (30); default 0: no limit",
    )
    parser.add_argument("--profile", metavar="PATH", help="write a cProfile of the run here")
    args = parser.parse_args(argv)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("no_proxy", "127.0.0.1,localhost")
    logging.basicConfig(level=logging.WARNING)
    with _profiled(args.profile):
        result = asyncio.run(
            run_load(args.chats, args.messages, rate_limit_per_second=args.telegram_rate_limit)
        )
    print(report(result))
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
