"""Failover soak: several gateways on one PostgreSQL database while chats write; the leader is
killed (SIGKILL) or paused longer than its lease (SIGSTOP, then SIGCONT once a standby took
over), or every host is killed and started again, round after round. Then every message must
be answered exactly once, nothing lost from the store, and no gateway may have called the Bot
API after it woke up fenced.

The chats, the model's answers and the transcript checks are the kill soak's
(:mod:`bench.soak_checks`). Used by ``tests/gateway/test_failover_soak.py`` and runnable alone:

    python -m bench.failover_soak --rounds 10 [--pg-url postgresql://.../empty_db]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import text

from bench.failover_cluster import (
    Cluster,
    Member,
    database_or_throwaway,
    read_logs,
    running_cluster,
)
from bench.soak_checks import (
    answered_everything,
    bot_texts,
    check_transcript,
    check_user_texts,
    markers_in,
    message_text,
)
from bench.soak_checks import reply_text as soak_reply_text
from gateway.store.db import open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator

FIRST_CHAT = 7001
SETTLE_TIMEOUT_SECONDS = 120.0
MULTI_PART = (
    "SELECT count(*) FROM (SELECT reply_id FROM reply_parts GROUP BY reply_id "
    "HAVING count(*) > 1) AS multi"
)
UNSENT_PARTS = "SELECT count(*) FROM reply_parts WHERE platform_message_id IS NULL"
Action = Literal["kill", "pause", "restart_all"]
CYCLE: tuple[Action, ...] = ("kill", "pause", "kill", "pause", "restart_all")
"""The command line's schedule, round after round."""


@dataclass(frozen=True)
class FailoverSoakSettings:
    """The size and pace of one soak."""

    members: int = 3
    chats: int = 4
    messages: int = 10
    """Per chat."""
    schedule: tuple[Action, ...] = ("kill", "pause", "kill", "pause")
    """What happens to the leader, round after round."""
    lease_seconds: float = 2.0
    seed: int = 1
    model_delay: tuple[float, float] = (0.05, 0.6)
    send_gap: tuple[float, float] = (0.4, 2.5)
    burst_chance: float = 0.3
    uptime: tuple[float, float] = (0.5, 2.5)
    """Seconds a leader serves before the next round's action."""
    stream_delay: float = 0.0
    """Seconds between two streamed events of an answer: with a delay, answers are shown live
    (drafts in these private chats) and kills and pauses land mid-stream."""


@dataclass
class FailoverSoakReport:
    """What happened and what was found wrong (``problems`` empty: the promise held)."""

    messages: int
    kills: int = 0
    pauses: int = 0
    restarts_of_all: int = 0
    takeover_seconds: dict[str, list[float]] = field(default_factory=dict)
    """From the action to the next leader polling Telegram, per action."""
    bot_messages: int = 0
    multi_part_replies: int = 0
    parts_found_after_takeover: int = 0
    """Parts a kill left in doubt that the next leader found delivered (not sent again)."""
    calls_after_waking: int = 0
    """Bot API calls of a paused leader after SIGCONT (must be 0), but for the poll in flight."""
    polls_in_flight: int = 0
    """getUpdates of a paused leader that reached Telegram after SIGCONT: at most one per
    pause, the long poll whose gate passed before the pause (a process can stop between any
    check and its write). Harmless: its updates are never confirmed (no later getUpdates
    carries the offset) nor recorded (the store refuses the fenced leader's writes)."""
    turns_resumed: int = 0
    """Turns a new leader resumed where the old one was stopped mid-turn."""
    drafts: int = 0
    """Draft updates of answers shown live (``stream_delay``)."""
    step_downs: int = 0
    """Terms ended by a lost lease (a woken leader's, and any renewal that came too late)."""
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


async def _user(
    telegram: TelegramEmulator, chat: int, settings: FailoverSoakSettings, rng: random.Random
) -> None:
    index = 0
    while index < settings.messages:
        size = rng.choice((2, 3)) if rng.random() < settings.burst_chance else 1
        for _ in range(min(size, settings.messages - index)):
            telegram.push_message(chat, message_text(chat, index), user_id=chat)
            index += 1
        await asyncio.sleep(rng.uniform(*settings.send_gap))


async def _kill_round(cluster: Cluster, report: FailoverSoakReport) -> None:
    """Kill the leader mid-work; wait for a standby to serve; start the killed one again."""
    leader, lease = await cluster.wait_serving()
    started = time.monotonic()
    await cluster.kill(leader)
    await cluster.wait_serving(after_epoch=lease.epoch)
    report.takeover_seconds.setdefault("kill", []).append(round(time.monotonic() - started, 2))
    report.kills += 1
    await cluster.start(leader)  # the host comes back, as a standby


async def _restart_all_round(cluster: Cluster, report: FailoverSoakReport) -> None:
    """Every host dies at once (SIGKILL) and comes back: the schema is current, one of them
    leads again and takes up what the store says."""
    _, lease = await cluster.wait_serving()
    started = time.monotonic()
    await asyncio.gather(*(cluster.kill(member) for member in cluster.members))
    await asyncio.gather(*(cluster.start(member) for member in cluster.members))
    await cluster.wait_serving(after_epoch=lease.epoch)
    elapsed = round(time.monotonic() - started, 2)
    report.takeover_seconds.setdefault("restart_all", []).append(elapsed)
    report.restarts_of_all += 1


async def _pause_round(cluster: Cluster, report: FailoverSoakReport) -> tuple[Member, float]:
    """Pause the leader past its lease; once a standby serves, wake it up. Returns it and
    when it woke (it must send nothing from then on while the new leader leads)."""
    leader, lease = await cluster.wait_serving()
    started = time.monotonic()
    cluster.pause(leader)
    await cluster.wait_serving(after_epoch=lease.epoch)
    report.takeover_seconds.setdefault("pause", []).append(round(time.monotonic() - started, 2))
    report.pauses += 1
    cluster.resume(leader)
    return leader, leader.resumed_at[-1]


def split_poll_in_flight(calls: list[str]) -> tuple[int, list[str]]:
    """A woken leader's calls: (1 if its first getUpdates may be the poll in flight at the
    pause else 0, every other call). Polls are sequential, so only one can be in flight; a
    second getUpdates, or any other method, passed the gate after waking."""
    if "getUpdates" not in calls:
        return 0, calls
    rest = list(calls)
    rest.remove("getUpdates")
    return 1, rest


async def _check_store(
    pg_url: str, chats: list[int], messages: int, report: FailoverSoakReport
) -> list[str]:
    """Nothing pending, every user text stored once, every planned part sent; counts the
    replies sent in several parts."""
    problems: list[str] = []
    store = await open_store(pg_url)
    try:
        async with store.engine.connect() as connection:
            report.multi_part_replies = (await connection.execute(text(MULTI_PART))).scalar_one()
            unsent = (await connection.execute(text(UNSENT_PARTS))).scalar_one()
        if unsent:
            problems.append(f"{unsent} reply part(s) never sent")
        repo = Repository(store)
        for record in await repo.pending_inbound("telegram"):
            problems.append(f"inbound {record.platform_message_id} is {record.status}")
        for chat in chats:
            sessions = await repo.list_sessions(key=f"telegram:{chat}")
            texts = [
                str(m.content)
                for session in sessions
                for m in await repo.all_messages(session.id)
                if m.role == "user"
            ]
            problems += check_user_texts(chat, texts, messages)
    finally:
        await store.close()
    return problems


async def run_failover_soak(
    settings: FailoverSoakSettings, workdir: Path, pg_url: str
) -> FailoverSoakReport:
    """One soak in ``workdir`` (the members' homes and logs) on the empty database ``pg_url``."""
    rng = random.Random(settings.seed)
    chats = [FIRST_CHAT + n for n in range(settings.chats)]
    report = FailoverSoakReport(messages=settings.chats * settings.messages)
    started = time.monotonic()

    async def answer(body: dict[str, Any]) -> str:
        await asyncio.sleep(rng.uniform(*settings.model_delay))
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last)
        return soak_reply_text(markers_in(text))

    async with (
        TelegramEmulator() as telegram,
        AnthropicEmulator(reply_fn=answer) as anthropic,
        running_cluster(
            workdir,
            pg_url,
            telegram,
            anthropic,
            size=settings.members,
            lease_seconds=settings.lease_seconds,
        ) as cluster,
    ):
        anthropic.stream_delay = settings.stream_delay
        await cluster.wait_serving()
        users = asyncio.gather(*(_user(telegram, chat, settings, rng) for chat in chats))
        woken: list[tuple[Member, float, float]] = []
        awake: tuple[Member, float] | None = None
        for action in settings.schedule:
            await asyncio.sleep(rng.uniform(*settings.uptime))
            if awake is not None:  # its window ends: from here another leader may fall
                woken.append((*awake, time.monotonic()))
                awake = None
            if action == "kill":
                await _kill_round(cluster, report)
            elif action == "restart_all":
                await _restart_all_round(cluster, report)
            else:
                awake = await _pause_round(cluster, report)
        await users
        await _settle(telegram, chats, settings.messages, report)
        if awake is not None:
            woken.append((*awake, time.monotonic()))
        await _stop_all(cluster, report)
        for member, since, until in woken:
            in_flight, calls = split_poll_in_flight(cluster.calls_by(member, since, until))
            report.polls_in_flight += in_flight
            report.calls_after_waking += len(calls)
            if calls:
                report.problems.append(f"{member.name} called {calls[:5]} after waking fenced")
        report.drafts = sum(1 for _, method, _ in telegram.callers if method == "sendMessageDraft")
        for chat in chats:
            sent = bot_texts(telegram, chat)
            report.bot_messages += len(sent)
            report.problems += check_transcript(chat, sent, settings.messages)
        logs = read_logs(cluster)
    report.problems += await _check_store(pg_url, chats, settings.messages, report)
    report.turns_resumed = sum(log.count("resuming an interrupted turn") for log in logs.values())
    report.step_downs = sum(log.count("failover: stepping down") for log in logs.values())
    report.parts_found_after_takeover = sum(
        log.count("was delivered before the restart") for log in logs.values()
    )
    report.seconds = round(time.monotonic() - started, 1)
    return report


async def _settle(
    telegram: TelegramEmulator, chats: list[int], messages: int, report: FailoverSoakReport
) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    while not answered_everything(telegram, chats, messages):
        if time.monotonic() > deadline:
            report.problems.append("the cluster did not answer everything in time")
            return
        await asyncio.sleep(0.2)


async def _stop_all(cluster: Cluster, report: FailoverSoakReport) -> None:
    """SIGTERM every member, standbys first (a leader stopping hands over at once)."""
    found = await cluster.leader()
    leader = found[0] if found else None
    order = [m for m in cluster.members if m is not leader] + ([leader] if leader else [])
    for member in order:
        if member.pid is not None and await cluster.stop(member) != 0:
            report.problems.append(f"{member.name} did not stop cleanly on SIGTERM")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-url", help="an empty database (default: a throwaway server)")
    parser.add_argument(
        "--rounds", type=int, default=10, help="kill, pause, kill, pause, restart all, ..."
    )
    parser.add_argument("--chats", type=int, default=FailoverSoakSettings.chats)
    parser.add_argument("--messages", type=int, default=30, help="per chat")
    parser.add_argument("--seed", type=int, default=FailoverSoakSettings.seed)
    parser.add_argument(
        "--stream-delay", type=float, default=0.0, help="seconds per streamed event (drafts)"
    )
    args = parser.parse_args(argv)
    schedule = tuple(CYCLE[n % len(CYCLE)] for n in range(args.rounds))
    settings = FailoverSoakSettings(
        chats=args.chats,
        messages=args.messages,
        schedule=schedule,
        seed=args.seed,
        stream_delay=args.stream_delay,
    )
    with (
        database_or_throwaway(args.pg_url) as url,
        tempfile.TemporaryDirectory(prefix="hermes-failover-") as workdir,
    ):
        report = asyncio.run(run_failover_soak(settings, Path(workdir), url))
    print(json.dumps(asdict(report), indent=2))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
