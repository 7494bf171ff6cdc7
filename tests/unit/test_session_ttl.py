"""``prompt_caching.cache_ttl: auto``: the tier a session uses, chosen from its message times,
is the tier its breakpoints carry and the tier its cache is judged cold by."""

from __future__ import annotations

import pytest

from agent.loop import LoopSettings
from agent.model_table import lookup_model
from agent.policy.session_policy import PolicySettings, SessionPolicy
from agent.prompt_caching import caching_policy, caching_status_line

SONNET = lookup_model("claude-sonnet-4-5")
HAIKU = lookup_model("claude-haiku-4-5")
MINUTE = 60.0
DAY = 86_400.0
START = 1_764_000_000.0


def policy(times: list[float], cache_ttl: str = "auto") -> SessionPolicy:
    return SessionPolicy(PolicySettings(cache_ttl=cache_ttl), SONNET, HAIKU, times)


def every(gap: float, count: int, start: float = START) -> list[float]:
    return [start + i * gap for i in range(count)]


def test_auto_picks_one_hour_for_a_session_that_answers_every_twenty_minutes() -> None:
    session = policy(every(20 * MINUTE, 20))
    assert session.ttl == "1h"
    assert session.ttl_seconds == 3600.0


def test_auto_keeps_five_minutes_when_gaps_are_seconds_or_days() -> None:
    times = [day * DAY + i * 40.0 for day in range(0, 30, 3) for i in range(15)]
    assert policy(times).ttl == "5m"


def test_fixed_tiers_keep_their_meaning_whatever_the_gaps() -> None:
    assert policy(every(20 * MINUTE, 20), "5m").ttl == "5m"
    assert policy(every(40.0, 50), "1h").ttl == "1h"


def test_the_tier_at_a_moment_depends_only_on_the_messages_up_to_it() -> None:
    times = every(20 * MINUTE, 20)
    session = policy(times)
    # Too few gaps before the 13th message; enough from then on.
    assert [session.ttl_at(t) for t in times[:12]] == ["5m"] * 12
    assert session.ttl_at(times[13]) == "1h"
    # The same messages noted one by one choose the same tiers (a replay decides the same).
    replayed = policy([])
    seen = []
    for t in times:
        replayed.note_message(t)
        seen.append(replayed.ttl)
    assert seen == [session.ttl_at(t) for t in times]


def test_cold_is_judged_by_the_tier_the_last_call_was_cached_with() -> None:
    times = every(20 * MINUTE, 20)
    hourly = policy(times)
    last = times[-1]
    # On the 1h tier a 20-minute gap finds the cache warm; a 2-hour gap finds it cold.
    assert not hourly.cache_is_cold(last, last + 20 * MINUTE)
    assert hourly.cache_is_cold(last, last + 2 * 3600.0)
    # With a fixed 5m tier the same 20-minute gap is cold.
    assert policy(times, "5m").cache_is_cold(last, last + 20 * MINUTE)
    # The message that tips the choice to 1h still finds a cache written on the 5m tier.
    early = policy(times[:12])
    early.note_message(times[12])
    assert early.ttl == "1h"
    assert early.cache_is_cold(times[11], times[12])
    # Unknown times count as warm, as before.
    assert not hourly.cache_is_cold(None, last)


def test_the_loop_marks_with_the_sessions_tier_else_the_fixed_one() -> None:
    fixed = caching_policy("anthropic", "claude-sonnet-4-5", None, "1h")
    auto = caching_policy("anthropic", "claude-sonnet-4-5", None, "auto")
    assert LoopSettings(cache_policy=fixed).marker_ttl() == "1h"
    assert LoopSettings(cache_policy=auto).marker_ttl() == "5m"
    assert LoopSettings(cache_policy=auto, cache_ttl=lambda: "1h").marker_ttl() == "1h"


def test_status_shows_auto_and_the_sessions_tier_now() -> None:
    auto = caching_policy("anthropic", "claude-sonnet-4-5", None, "auto")
    assert caching_status_line(auto) == (
        "💾 Prompt caching: ENABLED (Claude native, auto TTL: 5m or 1h per session)"
    )
    assert caching_status_line(auto, "1h") == (
        "💾 Prompt caching: ENABLED (Claude native, auto TTL: 1h now)"
    )
    with pytest.raises(ValueError, match="ttl"):
        caching_policy("anthropic", "claude-sonnet-4-5", None, "2h")
