"""``hermes demo``: an offline overnight of the real daemon, reported in numbers.

Starts the Anthropic emulator (a 16K window, so compaction really happens) and the Telegram Bot
API emulator on 127.0.0.1, runs the real gateway with the real python-telegram-bot client, store
and agent, and drives a scripted night of three chats: questions, tool calls, a long paste that
Telegram splits in pieces, quiet gaps that advance the emulator's clock (so caches expire), then
``/compress`` and ``/usage``. It ends with a report: messages handled, replies, compactions by
trigger, cache hit rate, cost with caching against the same calls without it, and the gateway's
overhead per message.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config.schema import parse_config
from gateway.reports.totals import cost_without_caching
from gateway.runtime.app import App, open_app
from gateway.runtime.gateway import Gateway

if TYPE_CHECKING:
    from sandbox.anthropic_api import AnthropicEmulator
    from sandbox.telegram_api import TelegramEmulator

DEMO_CONTEXT_LENGTH = 16_000
DEMO_MESSAGES_PER_CHAT = 52
DEMO_CHATS = {1001: "Ada", 1002: "Brian", 1003: "Chen"}
DEMO_KEY_ENV = "HERMES_DEMO_API_KEY"
DEMO_TOKEN_ENV = "HERMES_DEMO_TELEGRAM_TOKEN"
QUIET_GAP_SECONDS = 45.0
NIGHT_GAP_SECONDS = 2 * 3600.0
PROGRESS_WIDTH = 32
PASTE_LINES = 460
"""A paste of about 13K tokens: Telegram splits it in pieces, the gateway merges them, and the
window is left above 85% so the next turn shows session hygiene at work."""
REPLY_TIMEOUT = 60.0
NEEDS_CHECKOUT = (
    "hermes demo needs a checkout of the project: the emulators in sandbox/ are not installed "
    "(run ./dev.sh demo from the checkout)"
)
NEEDS_CHECKOUT_EXIT = 2

_LINES = [
    "Good evening! I'm planning a trip to Lisbon in May; remember my budget is 1800 euros.",
    '[[tool:calculator {"expression": "1800 / 7"}]] What is that per day for a week?',
    "What time is it right now?",
    "Please remember: my cat is called Miso and she is 4 years old.",
    "Let's decide: we keep the store API stable and refactor src/gateway/session.py first.",
    "Which neighbourhoods would you suggest for a quiet stay?",
    '[[tool:calculator {"expression": "3 * 89 + 2 * 45"}]] Hotel plus two dinners, total?',
    "Summarise what we decided so far in two lines.",
]
_PASTE = "Here are tonight's meeting notes, please keep them in mind:\n" + "\n".join(
    f"- item {i}: service {i} moves to week {i % 52 + 1}; owner team {chr(65 + i % 26)}; "
    "risk is low unless the billing migration slips again."
    for i in range(PASTE_LINES)
)


@dataclass(slots=True)
class Timeline:
    """What the driver saw: latencies and how many messages went out."""

    sent: int = 0
    latencies_ms: list[float] = field(default_factory=list)


def _script(chat_index: int, per_chat: int) -> list[tuple[str, float]]:
    """(text, quiet seconds before it) for one chat: deterministic, a little different per chat."""
    script: list[tuple[str, float]] = []
    for i in range(per_chat - 2):
        text = _LINES[(i + chat_index) % len(_LINES)]
        gap = NIGHT_GAP_SECONDS if i and i % 17 == 0 else QUIET_GAP_SECONDS
        script.append((f"{text} (#{i + 1})", gap))
    if chat_index == 0:
        script.insert(min(20, len(script)), (_PASTE, QUIET_GAP_SECONDS))
    script.append(("/compress the Lisbon trip", QUIET_GAP_SECONDS))
    script.append(("/usage", QUIET_GAP_SECONDS))
    return script


class _Progress:
    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0

    def step(self) -> None:
        self.done += 1
        filled = PROGRESS_WIDTH * self.done // self.total
        bar = f"[{'#' * filled}{'-' * (PROGRESS_WIDTH - filled)}] {self.done}/{self.total} messages"
        if sys.stderr.isatty():
            sys.stderr.write("\r" + bar + ("\n" if self.done == self.total else ""))
        elif self.done == self.total or self.done % max(1, self.total // 10) == 0:
            sys.stderr.write(bar + "\n")  # a log, not a terminal: one line per tenth
        sys.stderr.flush()


async def _drive_chat(
    chat_id: int,
    script: list[tuple[str, float]],
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    timeline: Timeline,
    progress: _Progress,
) -> None:
    for text, gap in script:
        anthropic.clock.advance(gap / len(DEMO_CHATS))
        before = len(telegram.sent_messages(chat_id))
        started = time.perf_counter()
        telegram.push_message(
            chat_id,
            text,
            user_id=chat_id,
            first_name=DEMO_CHATS[chat_id],
            username=DEMO_CHATS[chat_id].lower(),
        )
        timeline.sent += 1
        expected = before + 1
        await telegram.wait_for_sent(chat_id, expected, timeout=REPLY_TIMEOUT)
        await _settle(telegram, chat_id)
        timeline.latencies_ms.append((time.perf_counter() - started) * 1000)
        progress.step()


async def _settle(telegram: TelegramEmulator, chat_id: int) -> None:
    """Wait until a multi-part reply (notice + answer, or a split answer) has fully arrived."""
    count = -1
    while count != len(telegram.sent_messages(chat_id)):
        count = len(telegram.sent_messages(chat_id))
        await asyncio.sleep(0.05)


def _config(home: Path, anthropic: AnthropicEmulator, telegram: TelegramEmulator):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "model": {
                "name": "claude-sonnet-4-5",
                "base_url": anthropic.base_url,
                "api_key_env": DEMO_KEY_ENV,
                "context_length": DEMO_CONTEXT_LENGTH,
                "max_tokens": 1024,
                "max_retries": 0,
            },
            "platforms": {
                "telegram": {
                    "enabled": True,
                    "token_env": DEMO_TOKEN_ENV,
                    "base_url": telegram.base_url,
                    "base_file_url": telegram.base_file_url,
                    "allowed_users": list(DEMO_CHATS),
                    "poll_timeout": 1,
                }
            },
            "database": {"url": f"sqlite+aiosqlite:///{home / 'hermes.db'}"},
            "logging": {"level": "WARNING"},
        },
        source="demo",
    )


async def run_demo(turns: int | None = None) -> int:
    """Run the demo and print the report; returns the exit code (2 without the emulators)."""
    # The emulators live in the checkout's sandbox/, which the wheel and the image leave out.
    try:
        from sandbox.anthropic_api import AnthropicEmulator
        from sandbox.telegram_api import TelegramEmulator
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "sandbox":
            raise
        print(NEEDS_CHECKOUT, file=sys.stderr)
        return NEEDS_CHECKOUT_EXIT
    per_chat = max(4, turns // len(DEMO_CHATS)) if turns else DEMO_MESSAGES_PER_CHAT
    home = Path(tempfile.mkdtemp(prefix="hermes-demo-"))
    os.environ.update(
        {
            "HERMES_HOME": str(home),
            DEMO_KEY_ENV: "demo-key-not-a-secret",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    anthropic = AnthropicEmulator(
        context_length=DEMO_CONTEXT_LENGTH, reply_tokens=60, record_bodies=False
    )
    telegram = TelegramEmulator()
    await anthropic.start()
    await telegram.start()
    os.environ[DEMO_TOKEN_ENV] = telegram.token
    started = time.perf_counter()
    try:
        async with open_app(_config(home, anthropic, telegram)) as app:
            gateway = Gateway(app)
            await gateway.start()
            print(f"telegram: connected as @{telegram.bot_username} (local emulator)")
            print(app.services.caching_line)
            scripts = [_script(i, per_chat) for i in range(len(DEMO_CHATS))]
            total = sum(len(script) for script in scripts)
            print(
                f"Driving {total} messages over {len(DEMO_CHATS)} chats "
                f"through a {DEMO_CONTEXT_LENGTH:,}-token window..."
            )
            timeline, progress = Timeline(), _Progress(total)
            try:
                await asyncio.gather(
                    *(
                        _drive_chat(chat, script, telegram, anthropic, timeline, progress)
                        for chat, script in zip(DEMO_CHATS, scripts, strict=True)
                    )
                )
            finally:
                await gateway.stop(grace_seconds=5.0)
            await _report(
                app, gateway, telegram, anthropic, timeline, time.perf_counter() - started
            )
            print(f"Data kept in {home}; look at it with: hermes dashboard --home {home}")
    finally:
        await telegram.stop()
        await anthropic.stop()
    return 0


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


async def _report(
    app: App,
    gateway: Gateway,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    timeline: Timeline,
    seconds: float,
) -> None:
    repo = app.repo
    sessions = [s for s in await repo.list_sessions(limit=100) if s.key.startswith("telegram:")]
    triggers: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    calls = prompt = read = stored = 0
    cost = without = 0.0
    for session in sessions:
        for compaction in await repo.list_compactions(session.id):
            triggers[compaction.trigger] += 1
            outcomes[compaction.outcome] += 1
        totals = await repo.usage_totals(session.id)
        calls += totals.calls
        prompt += totals.prompt_tokens
        read += totals.cache_read_tokens
        cost += totals.cost_usd
        without += cost_without_caching(totals, app.services.model)
        stored += await repo.count_messages(session.id)
    replies = len(telegram.sent_messages())
    overhead = list(gateway.overhead_ms)
    print("\n=== Hermes demo: one night, three chats ===")
    print(
        f"Messages handled      {timeline.sent} from {len(sessions)} chats "
        f"({stored} messages stored, none deleted)"
    )
    print(f"Replies sent          {replies} Telegram messages")
    print(f"API calls             {calls} (the emulator rejected {anthropic.stats.rejected_400})")
    print(
        "Compactions           "
        + (", ".join(f"{k} {v}" for k, v in sorted(triggers.items())) or "none")
        + "   outcomes: "
        + (", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none")
    )
    print(
        f"Cache hit rate        {read / prompt:.1%} of {prompt:,} prompt tokens"
        if prompt
        else "Cache hit rate        n/a"
    )
    saved = 1 - cost / without if without else 0.0
    print(
        f"Cost                  ${cost:.4f} with caching vs ${without:.4f} without "
        f"({saved:.0%} saved)"
    )
    print(
        f"Gateway overhead      p50 {statistics.median(overhead):.1f} ms, "
        f"p95 {_p(overhead, 0.95):.1f} ms per message"
        " (excluding model time)"
        if overhead
        else "Gateway overhead      n/a"
    )
    print(
        f"Reply latency         p50 {_p(timeline.latencies_ms, 0.5):.0f} ms, "
        f"p95 {_p(timeline.latencies_ms, 0.95):.0f} ms"
    )
    print(f"Wall time             {seconds:.1f} s")
