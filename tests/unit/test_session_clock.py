"""The session clock: newest platform time seen, plus elapsed time since it was seen."""

from __future__ import annotations

from agent.policy.session_clock import SessionClock, newest_sent_at
from sandbox.clock import ManualClock


def test_clock_reads_the_newest_message_time_plus_the_time_elapsed_since() -> None:
    elapsed = ManualClock(5_000.0)
    clock = SessionClock(1_000.0, monotonic=elapsed.now, fallback=lambda: 9e9)

    elapsed.advance(30)
    assert clock.now() == 1_030.0
    clock.observe(2_000.0)
    assert clock.now() == 2_000.0
    elapsed.advance(7)
    assert clock.now() == 2_007.0


def test_older_or_missing_times_do_not_move_the_clock() -> None:
    elapsed = ManualClock()
    clock = SessionClock(1_000.0, monotonic=elapsed.now)

    clock.observe(500.0)
    clock.observe(None)

    assert clock.newest == 1_000.0
    assert clock.now() == 1_000.0


def test_a_session_without_message_times_uses_the_fallback() -> None:
    clock = SessionClock(monotonic=lambda: 0.0, fallback=lambda: 42.0)
    assert clock.newest is None
    assert clock.now() == 42.0


def test_clock_from_messages_starts_at_their_newest_time() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a", "_sent_at": 10.0},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c", "_sent_at": 70.0},
    ]
    assert newest_sent_at(messages) == 70.0
    assert newest_sent_at(messages[:1]) is None
    assert SessionClock.from_messages(messages, monotonic=lambda: 0.0).now() == 70.0
