"""Kill soak: the real daemon (``hermes gateway run``) SIGKILLed at random moments while chats
write, restarted each time; then every message must be answered exactly once.

This process runs the Telegram and Anthropic emulators and the simulated users; the daemon is
a child process on a SQLite file in a temporary directory. The model answers after a random
short delay (so kills land while it thinks, while parts are sent, while the store commits);
every fourth message asks for an answer longer than a Telegram message, and users sometimes
send two or three messages at once, which the gateway merges into one turn. After the last
kill the daemon runs until everything is answered and is stopped with SIGTERM. Checked (see
:mod:`bench.soak_checks`): every message answered exactly once and in order, every part of
every reply delivered exactly once, no user text stored twice, every inbound message done,
``PRAGMA integrity_check`` ok.

    python -m bench.kill_soak --chats 5 --messages 45 --kills 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.soak_checks import (
    answered_everything,
    bot_texts,
    check_transcript,
    check_user_texts,
    markers_in,
    message_text,
)
from bench.soak_checks import reply_text as soak_reply_text
from gateway.config.schema import parse_config
from gateway.store.db import default_database_url, open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MODEL_KEY_ENV = "HERMES_SOAK_MODEL_KEY"
TELEGRAM_TOKEN_ENV = "HERMES_SOAK_TELEGRAM_TOKEN"
FIRST_CHAT = 5001
START_TIMEOUT_SECONDS = 60.0
"""A fresh interpreter importing the SDKs, on a busy machine."""
SETTLE_TIMEOUT_SECONDS = 90.0
"""How long the last run gets to answer everything that is left."""
STOP_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class SoakSettings:
    """The size and pace of one soak."""

    chats: int = 5
    messages: int = 45
    """Per chat."""
    kills: int = 20
    seed: int = 1
    model_delay: tuple[float, float] = (0.02, 0.4)
    """Seconds the emulated model takes to answer, drawn uniformly."""
    send_gap: tuple[float, float] = (0.5, 5.0)
    """Seconds a user waits before writing again."""
    burst_chance: float = 0.25
    """How often a user sends two or three messages at once (merged into one turn)."""
    uptime: tuple[float, float] = (0.5, 5.0)
    """Seconds the daemon runs after it is polling before it is killed."""
    stream_delay: float = 0.0
    """Seconds between two streamed events of an answer (24 characters of text each): with
    a delay, answers are shown live (drafts, in these private chats) and kills land
    mid-stream."""


@dataclass
class SoakReport:
    """What happened and what was found wrong (``problems`` empty: the promise held)."""

    chats: int
    messages: int
    kills: int = 0
    model_requests: int = 0
    bot_messages: int = 0
    multi_part_replies: int = 0
    bursts: int = 0
    """Times a user sent two or three messages at once."""
    merged_turns: int = 0
    """Replies that answered more than one message."""
    live_messages: int = 0
    """Messages shown live (sent before their answer ended, then edited into the reply);
    private chats stream drafts only, so 0 here unless that changes."""
    parts_found_after_crash: int = 0
    """Parts a kill left in doubt (sent, id not recorded) that the restart found delivered."""
    seconds: float = 0.0
    integrity: str = ""
    problems: list[str] = field(default_factory=list)


def _config(workdir: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator) -> Path:
    config = parse_config(
        {
            "model": {
                "base_url": anthropic.base_url,
                "api_key_env": MODEL_KEY_ENV,
                "max_retries": 0,
            },
            "database": {"url": default_database_url(workdir / "home")},
            "platforms": {
                "telegram": {
                    "enabled": True,
                    "token_env": TELEGRAM_TOKEN_ENV,
                    "base_url": telegram.base_url,
                    "base_file_url": telegram.base_file_url,
                    "allow_all": True,
                    "poll_timeout": 1,
                    "typing_delay": 0,
                }
            },
            "gateway": {"delivery_backoff_seconds": 0.2},
        }
    )
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    return path


class Daemon:
    """Starts, kills and stops ``hermes gateway run`` processes on one config."""

    def __init__(self, config: Path, log: Path, telegram: TelegramEmulator) -> None:
        self.config = config
        self.log = log
        self.telegram = telegram
        self.process: asyncio.subprocess.Process | None = None
        self.env = {
            **os.environ,
            MODEL_KEY_ENV: "soak-key",
            TELEGRAM_TOKEN_ENV: telegram.token,
            "HERMES_HOME": str(config.parent / "home"),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    async def start(self) -> None:
        """Start a daemon and return once it polls Telegram."""
        polls = len(self.telegram.calls_of("getUpdates"))
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "gateway.cli.main",
                "gateway",
                "run",
                "--config",
                str(self.config),
                cwd=PROJECT_ROOT,
                env=self.env,
                stdout=log,
                stderr=log,
            )
        await self.telegram.wait_for_calls("getUpdates", polls + 1, timeout=START_TIMEOUT_SECONDS)

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT_SECONDS)


async def _user(
    telegram: TelegramEmulator, chat: int, settings: SoakSettings, rng: random.Random
) -> int:
    """One person writing ``settings.messages`` messages; returns how many bursts they sent."""
    index = bursts = 0
    while index < settings.messages:
        size = rng.choice((2, 3)) if rng.random() < settings.burst_chance else 1
        bursts += size > 1
        for _ in range(min(size, settings.messages - index)):
            telegram.push_message(chat, message_text(chat, index), user_id=chat)
            index += 1
        await asyncio.sleep(rng.uniform(*settings.send_gap))
    return bursts


async def run_soak(settings: SoakSettings, workdir: Path) -> SoakReport:
    """One soak in ``workdir`` (which keeps the database and the daemon's log)."""
    rng = random.Random(settings.seed)
    chats = [FIRST_CHAT + n for n in range(settings.chats)]
    report = SoakReport(chats=settings.chats, messages=settings.chats * settings.messages)
    started = time.monotonic()

    async def answer(body: dict[str, Any]) -> str:
        await asyncio.sleep(rng.uniform(*settings.model_delay))
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last)
        return soak_reply_text(markers_in(text))

    async with TelegramEmulator() as telegram, AnthropicEmulator(reply_fn=answer) as anthropic:
        anthropic.stream_delay = settings.stream_delay
        config = _config(workdir, telegram, anthropic)
        daemon = Daemon(config, workdir / "daemon.log", telegram)
        users = asyncio.gather(*(_user(telegram, chat, settings, rng) for chat in chats))
        for _ in range(settings.kills):
            await daemon.start()
            await asyncio.sleep(rng.uniform(*settings.uptime))
            await daemon.kill()
            report.kills += 1
        report.bursts = sum(await users)
        await daemon.start()
        deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
        while not answered_everything(telegram, chats, settings.messages):
            if time.monotonic() > deadline:
                report.problems.append("the last run did not answer everything in time")
                break
            await asyncio.sleep(0.2)
        if await daemon.stop() != 0:
            report.problems.append("the daemon did not stop cleanly on SIGTERM")
        report.model_requests = len(anthropic.requests)
        for chat in chats:
            sent = bot_texts(telegram, chat)
            report.bot_messages += len(sent)
            report.problems += check_transcript(chat, sent, settings.messages)
    await _check_store(workdir, chats, settings.messages, report)
    log = (workdir / "daemon.log").read_text(errors="replace")
    report.parts_found_after_crash = log.count("was delivered before the restart")
    report.seconds = round(time.monotonic() - started, 1)
    return report


async def _check_store(workdir: Path, chats: list[int], messages: int, report: SoakReport) -> None:
    url = default_database_url(workdir / "home")
    with sqlite3.connect(workdir / "home" / "hermes.db") as connection:
        report.integrity = connection.execute("PRAGMA integrity_check").fetchone()[0]
        report.multi_part_replies = connection.execute(
            "SELECT count(*) FROM (SELECT reply_id FROM reply_parts GROUP BY reply_id "
            "HAVING count(*) > 1)"
        ).fetchone()[0]
        report.merged_turns = connection.execute(
            "SELECT count(*) FROM (SELECT reply_id FROM inbound WHERE reply_id IS NOT NULL "
            "GROUP BY reply_id HAVING count(*) > 1)"
        ).fetchone()[0]
        report.live_messages = connection.execute("SELECT count(*) FROM live_messages").fetchone()[
            0
        ]
        unsent = connection.execute(
            "SELECT count(*) FROM reply_parts WHERE platform_message_id IS NULL"
        ).fetchone()[0]
    if report.integrity != "ok":
        report.problems.append(f"integrity_check: {report.integrity}")
    if unsent:
        report.problems.append(f"{unsent} reply part(s) never sent")
    store = await open_store(url)
    try:
        repo = Repository(store)
        for record in await repo.pending_inbound("telegram"):
            report.problems.append(f"inbound {record.platform_message_id} is {record.status}")
        for chat in chats:
            sessions = await repo.list_sessions(key=f"telegram:{chat}")
            texts = [
                str(m.content)
                for session in sessions
                for m in await repo.all_messages(session.id)
                if m.role == "user"
            ]
            report.problems += check_user_texts(chat, texts, messages)
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=SoakSettings.chats)
    parser.add_argument("--messages", type=int, default=SoakSettings.messages, help="per chat")
    parser.add_argument("--kills", type=int, default=SoakSettings.kills)
    parser.add_argument("--seed", type=int, default=SoakSettings.seed)
    parser.add_argument(
        "--stream-delay",
        type=float,
        default=SoakSettings.stream_delay,
        help="seconds per streamed event of an answer (live replies mid-kill)",
    )
    args = parser.parse_args(argv)
    settings = SoakSettings(
        chats=args.chats,
        messages=args.messages,
        kills=args.kills,
        seed=args.seed,
        stream_delay=args.stream_delay,
    )
    with tempfile.TemporaryDirectory(prefix="hermes-soak-") as workdir:
        report = asyncio.run(run_soak(settings, Path(workdir)))
    print(json.dumps(asdict(report), indent=2))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
