"""Scheduled jobs through the real daemon: the Telegram and Anthropic emulators, a moved clock.

The model's ``schedule`` calls are scripted with the Anthropic emulator's ``[[tool:NAME
{args}]]`` directive; it answers a job's prompt with "Noted: <prompt>...". The jobs' clock is a
:class:`ManualClock` the test moves: nothing sleeps for real.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.store.job_records import job_run_id
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, all_quiet, gateway_config
from tests.gateway.manual_clock import ManualClock

START = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
STRETCH = "Remind Alice to stretch"

CAROL = 77
BOB = 7
"""Allowed by his username ("bob") only."""
ClockedGateway = Callable[..., AbstractAsyncContextManager[Gateway]]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def run_clocked(
    tmp_path: Path, anthropic: AnthropicEmulator, telegram: TelegramEmulator, clock: ManualClock
) -> ClockedGateway:
    """``async with run_clocked() as gateway``: the daemon on Telegram with the test's clock;
    run it again for a restart (same database, same emulators)."""

    @asynccontextmanager
    async def running(
        limits: dict[str, Any] | None = None, jobs: dict[str, Any] | None = None, **options: Any
    ) -> AsyncIterator[Gateway]:
        config = gateway_config(tmp_path, anthropic, telegram=telegram, **options)
        for name, value in (limits or {}).items():
            setattr(config.limits, name, value)
        for name, value in (jobs or {}).items():
            setattr(config.jobs, name, value)
        async with open_app(config, job_clock=clock) as app:
            gateway = Gateway(app, hold_seconds=0.3)
            await gateway.start()
            try:
                yield gateway
            finally:
                await gateway.stop(grace_seconds=2.0)

    return running


def schedule(**args: Any) -> str:
    """A user message the emulated model answers with a schedule call."""
    return f"[[tool:schedule {json.dumps(args)}]]"


async def say(gateway: Gateway, telegram: TelegramEmulator, text: str, user: int = ALICE) -> str:
    """Alice (or ``user``) writes; returns the bot's last message to them once all is quiet."""
    telegram.push_message(user, text, username={ALICE: "alice", CAROL: "carol", BOB: "bob"}[user])
    await all_quiet(gateway, telegram)
    return str(telegram.sent_messages(user)[-1]["text"])


async def at(
    clock: ManualClock, gateway: Gateway, telegram: TelegramEmulator, when: datetime
) -> None:
    await clock.advance_to(when)
    await all_quiet(gateway, telegram)


def answers_to(telegram: TelegramEmulator, prompt: str, user: int = ALICE) -> list[str]:
    """The answers to runs of a job with this prompt (the model sees the run's header first)."""
    texts = [str(message["text"]) for message in telegram.sent_messages(user)]
    return [text for text in texts if text.startswith("Noted: [Scheduled job") and prompt in text]


async def test_a_reminder_in_two_minutes_is_answered_at_its_time_exactly_once(
    run_clocked: ClockedGateway,
    clock: ManualClock,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    async with run_clocked() as gateway:
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=120))
        tool_result = str(anthropic.requests[-1].body["messages"][-1]["content"])
        await at(clock, gateway, telegram, START + timedelta(seconds=119))
        before = answers_to(telegram, STRETCH)
        await at(clock, gateway, telegram, START + timedelta(seconds=120))
        job_request = anthropic.requests[-1]
        await at(clock, gateway, telegram, START + timedelta(days=1))
        after_a_day = answers_to(telegram, STRETCH)
        listed = await say(gateway, telegram, "/jobs")
    assert "schedule" in [tool["name"] for tool in job_request.body["tools"]]
    assert "Scheduled job 1: first run 2026-12-05 10:02 (UTC)" in tool_result
    assert before == []
    assert job_request.last_user_text == f"[Scheduled job 1, due 2026-12-05 10:02 (UTC)] {STRETCH}"
    assert len(after_a_day) == 1
    assert listed.startswith("You have no scheduled jobs")


async def test_jobs_lists_pending_jobs_and_cancels_one(
    run_clocked: ClockedGateway, clock: ManualClock, telegram: TelegramEmulator
) -> None:
    async with run_clocked() as gateway:
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=600))
        await say(gateway, telegram, schedule(prompt="Summarise the news", cron="30 8 * * *"))
        listed = await say(gateway, telegram, "/jobs")
        cancelled = await say(gateway, telegram, "/jobs cancel 1")
        await at(clock, gateway, telegram, START + timedelta(hours=1))
        after = await say(gateway, telegram, "/jobs")
    assert listed == (
        "Your scheduled jobs:\n"
        f"1. 2026-12-05 10:10 (UTC): {STRETCH}\n"
        "2. 2026-12-06 08:30 (UTC), repeats 30 8 * * *: Summarise the news"
    )
    assert cancelled == "Cancelled job 1."
    assert answers_to(telegram, STRETCH) == []
    assert after == (
        "Your scheduled jobs:\n2. 2026-12-06 08:30 (UTC), repeats 30 8 * * *: Summarise the news"
    )


async def test_a_daily_job_in_berlin_fires_at_seven_local_across_the_dst_change(
    run_clocked: ClockedGateway,
    clock: ManualClock,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    clock.set(datetime(2026, 3, 27, 12, 0, tzinfo=UTC))
    prompt = "Good morning summary"
    async with run_clocked() as gateway:
        told = await say(gateway, telegram, "/tz Europe/Berlin")
        await say(gateway, telegram, schedule(prompt=prompt, cron="0 7 * * *"))
        fired = []
        for when in [
            datetime(2026, 3, 28, 5, 59, 59, tzinfo=UTC),
            datetime(2026, 3, 28, 6, 0, tzinfo=UTC),  # 07:00 CET
            datetime(2026, 3, 29, 4, 59, 59, tzinfo=UTC),
            datetime(2026, 3, 29, 5, 0, tzinfo=UTC),  # 07:00 CEST
        ]:
            await at(clock, gateway, telegram, when)
            fired.append(len(answers_to(telegram, prompt)))
        listed = await say(gateway, telegram, "/jobs")
    assert told.startswith("Your time zone is now Europe/Berlin")
    assert fired == [0, 1, 1, 2]
    assert "2026-03-30 07:00 (Europe/Berlin)" in listed


async def test_a_job_missed_while_down_runs_once_within_grace_and_is_reported_beyond(
    run_clocked: ClockedGateway, clock: ManualClock, telegram: TelegramEmulator
) -> None:
    async with run_clocked() as gateway:
        await say(gateway, telegram, schedule(prompt="Water the plants", delay_seconds=60))
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=3000))
    clock.set(START + timedelta(minutes=90))  # down: 89 and 40 minutes late at the start
    async with run_clocked() as gateway:
        await clock.advance_to(START + timedelta(minutes=90, seconds=1))
        await all_quiet(gateway, telegram)
    async with run_clocked() as gateway:  # once more: nothing is run again
        await at(clock, gateway, telegram, START + timedelta(days=2))
    texts = [str(message["text"]) for message in telegram.sent_messages(ALICE)]
    assert len(answers_to(telegram, STRETCH)) == 1
    assert answers_to(telegram, "Water the plants") == []
    missed = [text for text in texts if text.startswith("I could not run")]
    assert missed == [
        "I could not run your scheduled job “Water the plants” due 2026-12-05 10:01 (UTC): I was "
        "offline for more than 60 minutes after its time, so it was skipped."
    ]


async def test_forget_deletes_the_users_jobs(
    run_clocked: ClockedGateway, clock: ManualClock, telegram: TelegramEmulator
) -> None:
    async with run_clocked() as gateway:
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=600))
        asked = await say(gateway, telegram, "/forget")
        done = await say(gateway, telegram, "/forget confirm")
        await at(clock, gateway, telegram, START + timedelta(hours=1))
        listed = await say(gateway, telegram, "/jobs")
    assert "your scheduled jobs (1)" in asked
    assert "1 scheduled job(s)" in done
    assert answers_to(telegram, STRETCH) == []
    assert listed.startswith("You have no scheduled jobs")


async def test_a_denied_users_jobs_are_disabled(
    run_clocked: ClockedGateway,
    clock: ManualClock,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    access = {"allowed_users": [ALICE, CAROL], "admin_users": [ALICE]}
    async with run_clocked(telegram_settings=access) as gateway:
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=60), user=CAROL)
        await say(gateway, telegram, f"/deny {CAROL}")
        await at(clock, gateway, telegram, START + timedelta(minutes=5))
        job = await gateway.app.repo.get_job(1)
    assert answers_to(telegram, STRETCH, user=CAROL) == []
    assert all(request.last_user_text != STRETCH for request in anthropic.requests)
    assert job is not None and job.status == "disabled"


async def test_a_job_over_the_budget_is_skipped_with_a_notice(
    run_clocked: ClockedGateway,
    clock: ManualClock,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    async with run_clocked(limits={"daily_usd_per_user": 0.000_001}) as gateway:
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=60))
        calls = len(anthropic.requests)
        await at(clock, gateway, telegram, START + timedelta(minutes=1))
    assert len(anthropic.requests) == calls
    notice = str(telegram.sent_messages(ALICE)[-1]["text"])
    assert notice.startswith("Your scheduled job 1 was skipped. Sorry, you have used")


async def test_jobs_due_at_the_same_second_in_two_chats_run_concurrently(
    run_clocked: ClockedGateway,
    clock: ManualClock,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    both = {"allowed_users": [ALICE, CAROL]}
    async with run_clocked(telegram_settings=both) as gateway:
        for user in (ALICE, CAROL):
            await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=60), user=user)
        typing = {user: telegram.chat_actions.count((user, "typing")) for user in (ALICE, CAROL)}
        anthropic.inject_fault("slow", count=2, contains="[Scheduled job", delay=3)
        await clock.advance_to(START + timedelta(seconds=60))
        await wait_until(
            lambda: all(telegram.chat_actions.count((u, "typing")) > n for u, n in typing.items())
        )
        answered_while_both_ran = answers_to(telegram, STRETCH) + answers_to(
            telegram, STRETCH, user=CAROL
        )
        await all_quiet(gateway, telegram)
    assert answered_while_both_ran == []
    assert len(answers_to(telegram, STRETCH)) == len(answers_to(telegram, STRETCH, user=CAROL)) == 1


async def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:  # noqa: ASYNC109
    async with asyncio.timeout(timeout):
        # The emulator records chat actions with no event to wait on: read its records.
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_a_job_continuing_the_chats_session_sees_the_conversation(
    run_clocked: ClockedGateway,
    clock: ManualClock,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
) -> None:
    async with run_clocked() as gateway:
        await say(gateway, telegram, "my plant is a fern")
        await say(gateway, telegram, schedule(prompt="Water the fern", delay_seconds=60))
        await say(
            gateway, telegram, schedule(prompt=STRETCH, delay_seconds=60, continue_session=True)
        )
        await at(clock, gateway, telegram, START + timedelta(minutes=1))
    by_prompt = {
        prompt: next(r for r in anthropic.requests if r.last_user_text.endswith(prompt))
        for prompt in ("Water the fern", STRETCH)
    }
    assert "my plant is a fern" in json.dumps(by_prompt[STRETCH].body["messages"])
    assert "my plant is a fern" not in json.dumps(by_prompt["Water the fern"].body["messages"])


async def test_with_jobs_off_there_is_no_schedule_tool_and_no_jobs_command(
    run_clocked: ClockedGateway, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_clocked(jobs={"enabled": False}) as gateway:
        listed = await say(gateway, telegram, "/jobs")
        await say(gateway, telegram, "hello")
    assert listed == "Scheduled jobs are off here."
    assert "schedule" not in [tool["name"] for tool in anthropic.requests[-1].body["tools"]]
    assert gateway.scheduler is None


async def test_a_user_allowed_by_username_gets_the_answers_of_his_jobs(
    run_clocked: ClockedGateway, clock: ManualClock, telegram: TelegramEmulator
) -> None:
    async with run_clocked() as gateway:
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=60), user=BOB)
        await at(clock, gateway, telegram, START + timedelta(minutes=1))
    assert len(answers_to(telegram, STRETCH, user=BOB)) == 1


async def test_a_job_made_in_a_group_is_its_makers_and_answers_in_the_group(
    run_clocked: ClockedGateway, clock: ManualClock, telegram: TelegramEmulator
) -> None:
    group = -100200300

    async def in_group(user: int, name: str, text: str) -> None:
        telegram.push_message(
            group, f"@hermes_test_bot {text}", chat_type="supergroup", user_id=user, username=name
        )
        await all_quiet(gateway, telegram)

    async with run_clocked() as gateway:
        await in_group(BOB, "bob", "hello all")
        await in_group(ALICE, "alice", schedule(prompt=STRETCH, delay_seconds=60))
        alices = await say(gateway, telegram, "/jobs")
        bobs = await say(gateway, telegram, "/jobs", user=BOB)
        await at(clock, gateway, telegram, START + timedelta(minutes=1))
    assert STRETCH in alices
    assert bobs.startswith("You have no scheduled jobs")
    assert len(answers_to(telegram, STRETCH, user=group)) == 1


FIRES_WITHIN = timedelta(seconds=10)
"""How close to its time a job runs on the machine's clock: seconds, not the next minute (a
bound against a sleep that never woke or rounding, generous for a loaded machine)."""


async def test_on_the_machines_clock_a_job_runs_within_seconds_of_its_time(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        await say(gateway, telegram, schedule(prompt=STRETCH, delay_seconds=1))
        await telegram.wait_for_sent(ALICE, 2, timeout=10)
        run = await gateway.app.repo.get_inbound("telegram", job_run_id(1, 1))
    assert run is not None
    due = datetime.fromtimestamp(run.payload["sent_at"], UTC)  # a run's time is its due time
    assert due <= run.received_at < due + FIRES_WITHIN
    assert len(answers_to(telegram, STRETCH)) == 1
