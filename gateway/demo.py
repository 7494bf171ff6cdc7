"""``hermes demo``: an offline, scripted overnight conversation against the local emulators.

Starts the Anthropic emulator on 127.0.0.1 with a small context window (so compaction really
happens), runs the real agent, context engine and store over three chats with gaps that
advance the emulator's clock, and prints a report: messages, compactions by trigger, cache hit
rate, cost with caching against the same calls without it, and per-turn overhead.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gateway.app import open_app
from gateway.config import parse_config
from gateway.reports import cost_without_caching
from gateway.session import SessionAddress
from sandbox.anthropic_api import AnthropicEmulator

DEMO_CONTEXT_LENGTH = 16_000
DEMO_TURNS = 150
DEMO_CHATS = ("alice", "bob", "carol")
DEMO_KEY_ENV = "HERMES_DEMO_API_KEY"
PROGRESS_WIDTH = 30

_TOPICS = [
    "I'm planning a trip to Lisbon in May; remember that my budget is 1800 euros.",
    "Can you calculate 1800 / 7 for a daily budget?",
    "Here are my notes from today's meeting:\n"
    + "\n".join(
        f"- item {i}: the deployment of service {i} moved to week {i + 10}" for i in range(40)
    ),
    "What time is it right now?",
    "Please remember: my cat is called Miso and she is 4 years old.",
    "Let's refactor src/gateway/session.py next; the decision is to keep the store API stable.",
    "Summarise what we decided so far in two lines.",
    "Another long paste for you:\n" + ("The quick brown fox jumps over the lazy dog. " * 60),
]


@dataclass(slots=True)
class DemoReport:
    """Numbers the demo prints at the end."""

    turns: int = 0
    replies: int = 0
    stored_messages: int = 0
    compactions: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    overhead_ms: list[float] = field(default_factory=list)


def _script(turns: int) -> list[tuple[str, str, float]]:
    """(chat, text, seconds of quiet before it): a deterministic overnight conversation."""
    lines = []
    for i in range(turns):
        chat = DEMO_CHATS[i % len(DEMO_CHATS)]
        text = _TOPICS[(i // len(DEMO_CHATS)) % len(_TOPICS)]
        if "calculate" in text:
            text = f'[[tool:calculator {{"expression": "{1800 + i} / 7"}}]] {text}'
        gap = 1800.0 if i % 40 == 39 else 20.0  # a long pause now and then lets caches expire
        lines.append((chat, f"({i + 1}) {text}", gap))
    return lines


def _progress(done: int, total: int) -> None:
    filled = PROGRESS_WIDTH * done // total
    bar = "#" * filled + "-" * (PROGRESS_WIDTH - filled)
    sys.stderr.write(f"\r[{bar}] {done}/{total} turns")
    sys.stderr.flush()
    if done == total:
        sys.stderr.write("\n")


async def run_demo(turns: int | None = None) -> int:
    """Run the demo and print the report; returns the exit code."""
    total = turns or DEMO_TURNS
    emulator = AnthropicEmulator(context_length=DEMO_CONTEXT_LENGTH, reply_tokens=60)
    base_url = await emulator.start()
    home = Path(tempfile.mkdtemp(prefix="hermes-demo-"))
    os.environ[DEMO_KEY_ENV] = "demo-key-not-secret"
    os.environ["HERMES_HOME"] = str(home)
    config = parse_config(
        {
            "model": {
                "name": "claude-sonnet-4-5",
                "base_url": base_url,
                "api_key_env": DEMO_KEY_ENV,
                "context_length": DEMO_CONTEXT_LENGTH,
                "max_tokens": 1024,
                "max_retries": 0,
            },
            "database": {"url": f"sqlite+aiosqlite:///{home / 'demo.db'}"},
            "logging": {"level": "WARNING"},
        },
        source="demo",
    )
    report = DemoReport()
    try:
        async with open_app(config) as app:
            print(app.services.caching_line)
            chats = len(DEMO_CHATS)
            print(f"Demo: {total} turns, {chats} chats, {DEMO_CONTEXT_LENGTH:,}-token context")
            session_ids: set[int] = set()
            for index, (chat, text, gap) in enumerate(_script(total), start=1):
                emulator.clock.advance(gap)
                address = SessionAddress(key=f"demo:{chat}", platform="demo", chat_id=chat)
                started = time.perf_counter()
                reply = await app.sessions.run_turn(address, text)
                elapsed = time.perf_counter() - started
                waited = reply.result.wait_seconds if reply.result else 0.0
                report.overhead_ms.append(max(0.0, elapsed - waited) * 1000)
                report.turns += 1
                report.replies += bool(reply.text)
                runtime = await app.sessions.get(address)
                session_ids.add(runtime.session_id)
                for compaction in ([reply.hygiene] if reply.hygiene else []) + (
                    reply.result.compactions if reply.result else []
                ):
                    report.compactions[compaction.trigger] += 1
                    report.outcomes[compaction.outcome] += 1
                _progress(index, total)
            # One manual compaction, as a user would send /compress.
            manual = await (
                await app.sessions.get(SessionAddress("demo:alice", "demo", "alice"))
            ).compress("the Lisbon trip")
            report.compactions[manual.trigger] += 1
            report.outcomes[manual.outcome] += 1
            totals = [await app.repo.usage_totals(sid) for sid in session_ids]
            report.stored_messages = sum(
                [await app.repo.count_messages(sid) for sid in session_ids]
            )
            _print_report(report, totals, app.services.model, emulator)
    finally:
        await emulator.stop()
    return 0


def _print_report(report: DemoReport, totals: list, model, emulator: AnthropicEmulator) -> None:  # type: ignore[no-untyped-def]
    calls = sum(t.calls for t in totals)
    prompt = sum(t.prompt_tokens for t in totals)
    read = sum(t.cache_read_tokens for t in totals)
    cost = sum(t.cost_usd for t in totals)
    without = sum(cost_without_caching(t, model) for t in totals)
    overhead = sorted(report.overhead_ms)
    p50 = statistics.median(overhead)
    p95 = overhead[int(len(overhead) * 0.95) - 1] if overhead else 0.0
    print("\n=== Hermes demo report ===")
    print(f"Turns handled:        {report.turns}  (replies sent: {report.replies})")
    print(f"Messages stored:      {report.stored_messages} (all kept; compaction only unlinks)")
    print(
        f"API calls:            {calls}  (emulator rejected {emulator.stats.rejected_400} requests)"
    )
    triggers = ", ".join(f"{k} {v}" for k, v in sorted(report.compactions.items())) or "none"
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())) or "none"
    print(f"Compactions:          {triggers}  (outcomes: {outcomes})")
    print(
        f"Cache hit rate:       {read / prompt:.1%} of {prompt:,} prompt tokens"
        if prompt
        else "Cache hit rate: n/a"
    )
    saving = 1 - cost / without if without else 0.0
    print(f"Cost with caching:    ${cost:.4f}  vs without: ${without:.4f}  ({saving:.0%} saved)")
    print(f"Overhead per turn:    p50 {p50:.1f} ms, p95 {p95:.1f} ms (excluding model time)")
