"""The gateway load benchmark: the gateway in this process, the emulators and users in another.

A tiny run goes through the real split (``bench/load_driver.py`` as a second OS process talking
JSON lines over pipes) and must come out clean; the exactly-once check must catch a chat that
got too few or too many replies; the driver must not outlive a benchmark that went away.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from bench.gateway_load import (
    MODEL_KEY_ENV,
    PROJECT_ROOT,
    TELEGRAM_TOKEN_ENV,
    report,
    run_load,
)
from bench.load_checks import check_replies
from bench.load_driver import EXIT_PARENT_GONE, READY, BotMessage, message_text

CHATS = 3
MESSAGES = 3
CHAT = 10_000
DRIVER_WAIT_SECONDS = 30.0


@pytest.fixture(autouse=True)
def _isolated_env(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # run_load puts the secrets into the environment; these make sure they leave with the test.
    monkeypatch.setenv(TELEGRAM_TOKEN_ENV, "")
    monkeypatch.setenv(MODEL_KEY_ENV, "")


def answer(chat_id: int, index: int, message_id: int) -> BotMessage:
    """What the bot sends for message ``index``: the emulated model echoes it."""
    return BotMessage(message_id, f"Noted: {message_text(chat_id, index)}")


async def test_small_load_is_answered_exactly_once_and_reported_in_messages_per_second() -> None:
    result = await run_load(CHATS, MESSAGES)

    assert result.problems == []
    assert result.answered == CHATS * MESSAGES
    assert result.model_requests == CHATS * MESSAGES
    assert len(result.overhead_ms) == CHATS * MESSAGES
    assert result.driver_peak_rss_mib > 0
    printed = report(result)
    assert f"answered exactly once: {CHATS * MESSAGES}/{CHATS * MESSAGES}  OK" in printed
    assert "messages/s" in printed


def test_a_message_left_unanswered_is_reported_as_a_problem() -> None:
    sent = {CHAT: [answer(CHAT, 0, 2), answer(CHAT, 1, 4)]}

    problems = check_replies(sent, {CHAT: [1, 3, 5]}, messages=3)

    assert problems == [f"chat {CHAT}: 2 replies to 3 messages"]


def test_a_message_answered_twice_is_reported_as_a_problem() -> None:
    twice = [answer(CHAT, 0, 2), answer(CHAT, 0, 3), answer(CHAT, 1, 5)]

    problems = check_replies({CHAT: twice}, {CHAT: [1, 4]}, messages=2)

    assert f"chat {CHAT}: 3 replies to 2 messages" in problems
    assert any("reply 1 does not answer it" in problem for problem in problems)


async def test_driver_stops_cleanly_when_the_benchmark_goes_away_before_go() -> None:
    driver = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.load_driver",
        "--chats",
        "1",
        "--messages",
        "1",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=PROJECT_ROOT,
    )
    assert driver.stdin is not None and driver.stdout is not None
    async with asyncio.timeout(DRIVER_WAIT_SECONDS):
        ready = json.loads(await driver.stdout.readline())
        driver.stdin.close()
        _, stderr = await driver.communicate()

    assert ready["event"] == READY
    assert ready["telegram"]["base_url"].startswith("http://127.0.0.1:")
    assert driver.returncode == EXIT_PARENT_GONE
    assert b"stdin closed while waiting for 'go'" in stderr
    assert b"Traceback" not in stderr
