"""What the failover soak allows a woken leader: the one long poll in flight at its pause."""

from __future__ import annotations

from bench.failover_soak import split_poll_in_flight


def test_one_getupdates_is_the_poll_in_flight_and_anything_else_is_a_fenced_call() -> None:
    assert split_poll_in_flight([]) == (0, [])
    assert split_poll_in_flight(["getUpdates"]) == (1, [])
    assert split_poll_in_flight(["getUpdates", "getUpdates"]) == (1, ["getUpdates"])
    assert split_poll_in_flight(["sendMessage", "getUpdates"]) == (1, ["sendMessage"])
    assert split_poll_in_flight(["editMessageText"]) == (0, ["editMessageText"])
