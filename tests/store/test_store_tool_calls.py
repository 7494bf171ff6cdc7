"""Tool calls: stored one row per call (never arguments or results), summed per tool and per
user since a point in time, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.model_table import lookup_model
from agent.types import ToolCallRecord, ToolOutcome
from gateway.sessions.recorder import StoreRecorder
from gateway.sessions.services import Billing
from gateway.store.repository import Repository
from gateway.store.repository_tool_calls import ToolCallStats

TODAY = datetime(2026, 12, 5, tzinfo=UTC)
ALICE = "telegram:42"
BOB = "telegram:7"


async def record(
    repo: Repository,
    user: str | None,
    tool: str,
    outcome: ToolOutcome,
    seconds: float | None,
    started_at: datetime = TODAY + timedelta(hours=9),
    session_id: int | None = None,
) -> None:
    call = ToolCallRecord(tool, outcome, seconds)
    await repo.record_tool_call(session_id, call, started_at=started_at, user_key=user)


@pytest.fixture
async def calls(any_repo: Repository) -> Repository:
    """Alice's and Bob's calls today, one of Alice's yesterday, one of no one's turn."""
    await record(any_repo, ALICE, "calculator", "ok", 0.5)
    await record(any_repo, ALICE, "calculator", "error", 1.5)
    await record(any_repo, ALICE, "notes__write", "denied", None)
    await record(any_repo, ALICE, "notes__write", "timeout", None)
    await record(any_repo, ALICE, "web_fetch", "cancelled", 0.25)
    await record(any_repo, BOB, "calculator", "ok", 2.0)
    await record(any_repo, None, "recall", "ok", 0.125)
    await record(any_repo, ALICE, "calculator", "ok", 9.0, started_at=TODAY - timedelta(hours=1))
    return any_repo


async def test_one_users_calls_since_a_day_are_summed_per_tool_most_called_first(
    calls: Repository,
) -> None:
    assert await calls.tool_call_stats(TODAY, ALICE) == [
        ToolCallStats("calculator", 2, errors=1, refused=0, cancelled=0, run_seconds=2.0,
                      longest_seconds=1.5),
        ToolCallStats("notes__write", 2, errors=0, refused=2, cancelled=0, run_seconds=0.0,
                      longest_seconds=0.0),
        ToolCallStats("web_fetch", 1, errors=0, refused=0, cancelled=1, run_seconds=0.25,
                      longest_seconds=0.25),
    ]  # fmt: skip


async def test_an_earlier_start_takes_in_the_earlier_calls(calls: Repository) -> None:
    [calculator, *_] = await calls.tool_call_stats(TODAY - timedelta(days=1), ALICE)
    assert (calculator.tool, calculator.calls, calculator.run_seconds) == ("calculator", 3, 11.0)
    assert calculator.longest_seconds == 9.0


async def test_everyones_calls_per_tool_and_per_user(calls: Repository) -> None:
    everyone = await calls.tool_call_stats(TODAY)
    assert [(s.tool, s.calls, s.longest_seconds) for s in everyone] == [
        ("calculator", 3, 2.0),
        ("notes__write", 2, 0.0),
        ("recall", 1, 0.125),
        ("web_fetch", 1, 0.25),
    ]
    per_user = await calls.tool_call_stats(TODAY, per_user=True)
    assert [(s.user, s.tool, s.calls) for s in per_user] == [
        ("(no user)", "recall", 1),
        (ALICE, "calculator", 2),
        (ALICE, "notes__write", 2),
        (ALICE, "web_fetch", 1),
        (BOB, "calculator", 1),
    ]


async def test_forgetting_a_user_deletes_their_tool_calls(calls: Repository) -> None:
    owned = await calls.owned_data("telegram", "42")
    await calls.forget_user("telegram", "42", owned)
    assert await calls.tool_call_stats(TODAY - timedelta(days=1), ALICE) == []
    assert [s.tool for s in await calls.tool_call_stats(TODAY, BOB)] == ["calculator"]


async def test_the_recorder_bills_the_turns_user_and_dates_the_start_by_its_clock(
    any_repo: Repository,
) -> None:
    session = await any_repo.get_or_create_session(ALICE, platform="telegram", chat_id="42")
    ended = TODAY + timedelta(hours=10)
    recorder = StoreRecorder(
        any_repo,
        session.id,
        lookup_model("claude-sonnet-4-5"),
        "anthropic",
        lambda: "5m",
        Billing(session.id, ALICE),
        now=lambda: ended,
    )
    await recorder.record_tool_call(ToolCallRecord("calculator", "ok", 2.0))

    [started_by_then] = await any_repo.tool_call_stats(ended - timedelta(seconds=2), ALICE)
    assert (started_by_then.tool, started_by_then.run_seconds) == ("calculator", 2.0)
    assert await any_repo.tool_call_stats(ended - timedelta(seconds=1), ALICE) == []
