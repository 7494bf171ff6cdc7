"""Benchmark: N private chats x M messages through the whole gateway, each answered exactly once.

What is measured is the gateway process alone. This process runs everything of ours, for real:
the :class:`~gateway.runtime.gateway.Gateway` with the real python-telegram-bot client, session
workers, the agent loop and the SQLite store in a temporary directory. The far side runs in a
second OS process (``bench/load_driver.py``): the Telegram emulator, the Anthropic emulator
answering at once, and the simulated users, as Telegram's servers and the model API are remote in
production. On 2 cores each process gets about one. Each chat writes like a person (the next
message only after the reply to the previous one); all chats write at the same time.

Prints messages/s (answered messages over the wall time of the sending phase), p50/p95 reply
latency, the gateway's own p50/p95 overhead per turn, its CPU time per message (all threads),
the slope of its RSS over the messages answered after the warm-up (MB per 1,000 messages, see
:mod:`bench.load_memory`) and the peak RSS of both processes; exits 1 when any message was not
answered exactly once, or when the driver died or stopped answering. ``--profile`` profiles the
gateway process only. ``--context-length`` and ``--reply-tokens`` make histories reach the
compaction threshold, so that memory is measured with every history bounded.

    python -m bench.gateway_load --chats 100 --messages 20
    python -m bench.gateway_load --chats 200 --messages 100 --context-length 16000 \
        --reply-tokens 300
    python -m bench.gateway_load --chats 100 --messages 20 --telegram-rate-limit 30
    python -m bench.gateway_load --chats 100 --messages 20 --profile /tmp/load.pstats
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from bench.load_checks import PLATFORM, check_replies, check_store
from bench.load_driver import (
    DEFAULT_REPLY_TOKENS,
    DUPLICATE_GRACE_SECONDS,
    FINAL,
    FINISH,
    GO,
    READY,
    REPLY_TIMEOUT_SECONDS,
    SENT,
    Endpoints,
    FinalReport,
    SendingReport,
    peak_rss_mib,
)
from bench.load_memory import (
    WARMUP_FRACTION,
    RssSampler,
    cpu_ms_after_warmup,
    rss_at_warmup,
    rss_slope,
)
from gateway.config.schema import Config, parse_config
from gateway.runtime import event_loop
from gateway.runtime.app import open_app
from gateway.runtime.event_loop import running_loop_name
from gateway.runtime.gateway import Gateway
from gateway.store.db import default_database_url
from gateway.store.writer import WriterStats

T = TypeVar("T")

MODEL_KEY_ENV = "HERMES_BENCH_MODEL_KEY"
TELEGRAM_TOKEN_ENV = "HERMES_BENCH_TELEGRAM_TOKEN"
DEFAULT_CHATS = 100
DEFAULT_MESSAGES = 20
DEFAULT_RATE_LIMIT_PER_SECOND = 0.0
"""Outgoing Telegram requests/s; 0 lifts the limit. The emulator does not enforce Telegram's
flood limits (about 30 messages/s overall), so by default the gateway is measured without them."""
TARGET_MESSAGES_PER_SECOND = 100.0
"""The acceptance target on 2 cores."""
STOP_GRACE_SECONDS = 10.0
POLL_TIMEOUT_SECONDS = 10
PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""Where ``python -m bench.load_driver`` finds its packages."""
READY_TIMEOUT_SECONDS = 60.0
"""Start-up of the driver: a fresh interpreter importing the emulators, on a busy machine."""
DRIVER_MARGIN_SECONDS = 60.0
"""Added to the longest a healthy driver can take for its ``sent`` line."""
FINAL_TIMEOUT_SECONDS = 60.0
DRIVER_EXIT_SECONDS = 15.0
"""How long the driver may take to stop its emulators before it is killed."""
DRIVER_LINE_LIMIT_BYTES = 256 * 1024 * 1024
"""The ``final`` line carries every reply text: far longer than asyncio's 64 KiB default."""


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
    driver_peak_rss_mib: float = 0.0
    event_loop: str = ""
    gateway_cpu_seconds: float = 0.0
    """CPU time of the gateway process (all its threads) while the messages were handled."""
    writer: WriterStats = field(default_factory=WriterStats)
    """The store writer's group commits, counted over the whole run."""
    context_length: int | None = None
    """The model's window (None: the model table's), as ``model.context_length``."""
    reply_tokens: int = DEFAULT_REPLY_TOKENS
    rss_slope_mb: float | None = None
    """RSS growth after the warm-up, MB per 1,000 messages (None: too few samples)."""
    rss_after_warmup_mb: float = 0.0
    cpu_ms_after_warmup: float | None = None
    """CPU per message after the warm-up: the steady state (no start-up imports)."""
    compactions: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def expected(self) -> int:
        """Messages sent in total."""
        return self.chats * self.messages_per_chat

    @property
    def messages_per_second(self) -> float:
        """Answered messages over the wall time of the sending phase."""
        return self.answered / self.sending_seconds if self.sending_seconds else 0.0


class DriverError(Exception):
    """The load driver died, hung or broke the protocol: the run cannot be judged."""


class LoadDriver:
    """This process's handle on the driver process; every wait for it is bounded."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process

    @classmethod
    @contextlib.asynccontextmanager
    async def running(
        cls, chats: int, messages: int, reply_tokens: int = DEFAULT_REPLY_TOKENS
    ) -> AsyncIterator[LoadDriver]:
        """Spawn the driver; on leaving, close its stdin and wait for it (killing if needed)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.load_driver",
            "--chats",
            str(chats),
            "--messages",
            str(messages),
            "--reply-tokens",
            str(reply_tokens),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=PROJECT_ROOT,
            limit=DRIVER_LINE_LIMIT_BYTES,
        )
        driver = cls(process)
        try:
            yield driver
        finally:
            await driver.close()

    async def send(self, command: str) -> None:
        """Write one command line."""
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps({"command": command}).encode() + b"\n")
            await self._process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as error:
            raise DriverError(f"could not send {command!r}: the driver has gone") from error

    async def receive(
        self,
        event: str,
        parse: Callable[[dict[str, Any]], T],
        timeout: float,  # noqa: ASYNC109 - each phase has its own bound
    ) -> T:
        """Read the next line, which must be ``event``, and ``parse`` it; DriverError when the
        driver exited, hung past ``timeout`` or printed something else."""
        assert self._process.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                line = await self._process.stdout.readline()
        except TimeoutError:
            raise DriverError(f"no {event!r} line within {timeout:.0f} s") from None
        except ValueError as error:  # a line past the limit
            raise DriverError(f"unreadable {event!r} line: {error}") from error
        if not line:
            status = await self.close()
            raise DriverError(f"exited (status {status}) before its {event!r} line")
        try:
            decoded = json.loads(line)
        except json.JSONDecodeError as error:
            raise DriverError(f"not a JSON line where {event!r} was due: {line[:80]!r}") from error
        if not isinstance(decoded, dict) or decoded.get("event") != event:
            raise DriverError(f"expected {event!r}, got {line[:80]!r}")
        try:
            return parse(decoded)
        except (KeyError, TypeError, ValueError) as error:
            raise DriverError(f"malformed {event!r} line: {error!r}") from error

    async def close(self) -> int | None:
        """End of input for the driver; wait for it to exit, kill it if it does not."""
        if self._process.stdin is not None and not self._process.stdin.is_closing():
            self._process.stdin.close()
        try:
            async with asyncio.timeout(DRIVER_EXIT_SECONDS):
                return await self._process.wait()
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
            return None


def sent_timeout_seconds(messages: int) -> float:
    """The longest a healthy driver takes for its ``sent`` line: every reply nearly too late."""
    return messages * REPLY_TIMEOUT_SECONDS + DUPLICATE_GRACE_SECONDS + DRIVER_MARGIN_SECONDS


def load_config(
    home: Path,
    endpoints: Endpoints,
    *,
    rate_limit_per_second: float = DEFAULT_RATE_LIMIT_PER_SECOND,
    context_length: int | None = None,
) -> Config:
    """A config pointing at the driver's emulators and a SQLite file under ``home``."""
    model: dict[str, Any] = {
        "base_url": endpoints.anthropic_base_url,
        "api_key_env": MODEL_KEY_ENV,
        "max_retries": 0,
    }
    if context_length is not None:
        model["context_length"] = context_length
    return parse_config(
        {
            "model": model,
            # A compaction's notice would be a second message to the user: the checks count
            # exactly one per message.
            "compression": {"notify": False},
            "database": {"url": default_database_url(home)},
            "platforms": {
                "telegram": {
                    "enabled": True,
                    "token_env": TELEGRAM_TOKEN_ENV,
                    "base_url": endpoints.telegram_base_url,
                    "base_file_url": endpoints.telegram_base_file_url,
                    "allow_all": True,
                    "poll_timeout": POLL_TIMEOUT_SECONDS,
                    "rate_limit_per_second": rate_limit_per_second,
                }
            },
            "logging": {"level": "WARNING"},
        }
    )


async def _measure(driver: LoadDriver, result: LoadResult) -> None:
    """Run the gateway against the driver's emulators, then check what both sides saw."""
    endpoints = await driver.receive(READY, Endpoints.from_event, READY_TIMEOUT_SECONDS)
    # Secrets reach the gateway through the environment only, as in production.
    os.environ[TELEGRAM_TOKEN_ENV] = endpoints.telegram_token
    os.environ[MODEL_KEY_ENV] = "bench-key"
    with tempfile.TemporaryDirectory(prefix="hermes-load-") as home:
        config = load_config(
            Path(home),
            endpoints,
            rate_limit_per_second=result.rate_limit_per_second,
            context_length=result.context_length,
        )
        async with open_app(config) as app:
            gateway = Gateway(app)
            await gateway.start()
            sampler = RssSampler(functools.partial(_turns_handled, gateway))
            try:
                cpu_before = time.process_time()
                sampler.start()
                await driver.send(GO)
                sending = await driver.receive(
                    SENT, SendingReport.from_event, sent_timeout_seconds(result.messages_per_chat)
                )
                result.gateway_cpu_seconds = time.process_time() - cpu_before
            finally:
                await sampler.stop()
                await gateway.stop(grace_seconds=STOP_GRACE_SECONDS)
            result.rss_slope_mb = rss_slope(sampler.samples, result.expected)
            result.rss_after_warmup_mb = rss_at_warmup(sampler.samples, result.expected)
            result.cpu_ms_after_warmup = cpu_ms_after_warmup(sampler.samples, result.expected)
            result.overhead_ms = list(gateway.overhead_ms)
            result.writer = replace(app.store.writer.stats)
            result.latencies_ms = sending.latencies_ms
            result.sending_seconds = sending.sending_seconds
            result.answered = len(sending.latencies_ms)
            result.problems += sending.problems
            await driver.send(FINISH)
            final = await driver.receive(FINAL, FinalReport.from_event, FINAL_TIMEOUT_SECONDS)
            result.model_requests = final.model_requests
            result.compactions = final.summary_requests
            result.driver_peak_rss_mib = final.peak_rss_mib
            result.problems += check_replies(final.sent, sending.pushed, result.messages_per_chat)
            result.problems += await check_store(
                app, final.sent, sending.pushed, result.messages_per_chat
            )
    if result.model_requests != result.expected:
        result.problems.append(
            f"{result.model_requests} model requests for {result.expected} messages"
        )


def _turns_handled(gateway: Gateway) -> int:
    """Turns the gateway finished so far (its ``hermes_turn_seconds`` histogram's count)."""
    value = gateway.metrics.registry.get_sample_value(
        "hermes_turn_seconds_count", {"platform": PLATFORM}
    )
    return int(value or 0)


async def run_load(
    chats: int,
    messages: int,
    *,
    rate_limit_per_second: float = DEFAULT_RATE_LIMIT_PER_SECOND,
    context_length: int | None = None,
    reply_tokens: int = DEFAULT_REPLY_TOKENS,
) -> LoadResult:
    """Run the whole benchmark and return what it measured and found wrong."""
    result = LoadResult(
        chats,
        messages,
        rate_limit_per_second=rate_limit_per_second,
        context_length=context_length,
        reply_tokens=reply_tokens,
    )
    result.event_loop = running_loop_name()
    async with LoadDriver.running(chats, messages, reply_tokens) as driver:
        try:
            await _measure(driver, result)
        except DriverError as error:
            result.problems.append(f"load driver: {error}")
            return result
        status = await driver.close()
    if status is None:
        result.problems.append(
            f"load driver still running {DRIVER_EXIT_SECONDS:.0f} s after 'final': killed"
        )
    elif status != 0:
        result.problems.append(f"load driver exited with status {status}")
    return result


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) of the samples; zeros when there are none."""
    if not samples:
        return 0.0, 0.0
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, round(len(ordered) * 0.95) - 1)]


def report(result: LoadResult) -> str:
    """The lines the benchmark prints."""
    latency = percentiles(result.latencies_ms)
    overhead = percentiles(result.overhead_ms)
    verdict = "OK" if not result.problems else f"FAILED ({len(result.problems)} problems)"
    rate = result.messages_per_second
    target = "meets" if rate >= TARGET_MESSAGES_PER_SECOND else "below"
    limit = result.rate_limit_per_second
    limit_text = f"{limit:g} requests/s" if limit else "off"
    cpu_ms = result.gateway_cpu_seconds * 1000 / max(result.answered, 1)
    steady = result.cpu_ms_after_warmup
    steady_text = "too few samples" if steady is None else f"{steady:.2f} ms"
    slope = result.rss_slope_mb
    slope_text = "too few samples" if slope is None else f"{slope:+.3f} MB per 1,000 messages"
    length = result.context_length
    window = f"{length:,}-token window" if length else "default window"
    sending = result.sending_seconds
    busy = 100 * result.gateway_cpu_seconds / sending if sending else 0.0
    lines = [
        f"gateway load: {result.chats} chats x {result.messages_per_chat} messages "
        f"({os.cpu_count()} CPUs, {result.event_loop} event loop, "
        f"Telegram rate limit {limit_text}, {window}, replies of {result.reply_tokens} tokens)",
        f"  answered exactly once: {result.answered}/{result.expected}  {verdict}",
        f"  model requests:        {result.model_requests} "
        f"(and {result.compactions} compaction summaries)",
        f"  throughput:            {rate:.1f} messages/s over {result.sending_seconds:.2f} s "
        f"({target} the {TARGET_MESSAGES_PER_SECOND:.0f}/s target)",
        f"  reply latency:         p50 {latency[0]:.1f} ms  p95 {latency[1]:.1f} ms",
        f"  gateway overhead:      p50 {overhead[0]:.2f} ms  p95 {overhead[1]:.2f} ms "
        f"({len(result.overhead_ms)} turns)",
        f"  gateway CPU:           {cpu_ms:.2f} ms per message "
        f"({busy:.0f}% of one core while sending; {steady_text} after the first "
        f"{WARMUP_FRACTION:.0%} of messages)",
        f"  store writes:          {result.writer.jobs} in {result.writer.batches} commits "
        f"(largest {result.writer.largest_batch}, replayed {result.writer.replayed_batches})",
        f"  RSS slope:             {slope_text} (after the first "
        f"{WARMUP_FRACTION:.0%} of messages, from {result.rss_after_warmup_mb:.1f} MB)",
        f"  peak RSS:              {peak_rss_mib():.1f} MiB (gateway process)",
        f"  driver peak RSS:       {result.driver_peak_rss_mib:.1f} MiB "
        "(emulators and simulated users, second process)",
    ]
    lines += [f"  problem: {problem}" for problem in result.problems[:20]]
    return "\n".join(lines)


@contextlib.contextmanager
def _profiled(path: str | None) -> Iterator[None]:
    """cProfile this process (the gateway's) into ``path`` (pstats format) when given."""
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
    parser.add_argument(
        "--context-length",
        type=int,
        metavar="TOKENS",
        help="the model's window (model.context_length); default: the model table's",
    )
    parser.add_argument(
        "--reply-tokens",
        type=int,
        default=DEFAULT_REPLY_TOKENS,
        help=f"length of the emulated model's replies (default {DEFAULT_REPLY_TOKENS})",
    )
    parser.add_argument(
        "--profile", metavar="PATH", help="write a cProfile of the gateway process here"
    )
    parser.add_argument(
        "--event-loop",
        choices=["auto", "uvloop", "asyncio"],
        default="auto",
        help="the gateway's event loop, as gateway.event_loop (default auto: uvloop if installed)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("no_proxy", "127.0.0.1,localhost")
    logging.basicConfig(level=logging.WARNING)
    load = run_load(
        args.chats,
        args.messages,
        rate_limit_per_second=args.telegram_rate_limit,
        context_length=args.context_length,
        reply_tokens=args.reply_tokens,
    )
    with _profiled(args.profile):
        result = event_loop.run(load, args.event_loop)
    print(report(result))
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
