"""The failover lines of ``/status``, ``hermes doctor`` and the dashboard: who leads, since
when, the standbys seen, takeovers counted (from :class:`FailoverState`, read from the store)."""

from __future__ import annotations

from datetime import datetime

from gateway.store.leases import Member
from gateway.store.repository_failover import FailoverState

TIME_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def leader_line(state: FailoverState) -> str:
    """Who leads, since when, under which epoch; or that nobody leads right now."""
    lease = state.lease
    takeovers = f"{lease.takeovers} takeover{'s' if lease.takeovers != 1 else ''}"
    if not lease.live or lease.acquired_at is None:
        return f"Failover: no leader right now (last epoch {lease.epoch}, {takeovers})"
    since = lease.acquired_at.strftime(TIME_FORMAT)
    return f"Failover: {lease.holder} leads since {since} (epoch {lease.epoch}, {takeovers})"


def standbys_line(state: FailoverState) -> str:
    """The standbys seen, each with how long ago it last reported."""
    if not state.standbys:
        return "Standbys seen: none"
    seen = ", ".join(_member_seen(member, state.now) for member in state.standbys)
    return f"Standbys seen: {seen}"


def failover_lines(state: FailoverState | None) -> list[str]:
    """Both lines, or none when failover never ran on this database."""
    if state is None:
        return []
    return [leader_line(state), standbys_line(state)]


def _member_seen(member: Member, now: datetime) -> str:
    age = max((now - member.seen_at).total_seconds(), 0.0)
    return f"{member.host}:{member.pid} ({age:.0f} s ago)"
