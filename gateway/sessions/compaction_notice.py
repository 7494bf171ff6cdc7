"""What the chat is told about a compaction, once, and what ``/status`` says of the last one.

Every compaction applied to a session's context (whatever ran it: the agent's threshold, the
gateway's hygiene, the context policy, a prompt too long for the model, in the turn or beside
it) is handed over by the agent loop once (:meth:`agent.loop.AgentLoop.take_compactions`);
the next reply carries one short line for it, before the answer, through the same
exactly-once delivery as the reply. ``/compress`` answers for itself; a compaction that
changed nothing, or only cleared tool outputs the model had used (``prune``), is not
mentioned. ``compression.notify: false`` keeps the chat quiet, except when the summary was
written without the summary model (the user is told what happened).
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.types import CompactionResult
from gateway.store.records import CompactionRecord

WINDOW_NOTICE = "ℹ️ Earlier messages were summarised to stay within the context window."
PAUSE_NOTICE = (
    "ℹ️ Earlier messages were summarised to keep this conversation cheap after a pause "
    "(the model's prompt cache had expired)."
)
PRUNED_NOTICE = "ℹ️ Old tool outputs were shortened to stay within the context window."
TRIGGER_REASONS = {
    "agent": "the context threshold",
    "hygiene": "hygiene at 85% of the window",
    "emergency": "a prompt too long for the model",
    "cold_start": "the first message after the prompt cache expired",
    "idle": "an idle session whose prompt cache expired",
    "manual": "/compress",
    "prune": "used tool outputs cleared at a new message",
}
"""Why each trigger compacted, as ``/status`` says it."""


def compaction_notice(result: CompactionResult, *, notify: bool) -> str | None:
    """The line the chat gets for ``result``, or None."""
    if result.trigger in ("manual", "prune") or result.outcome == "skipped":
        return None  # /compress answers itself; clearing used outputs is housekeeping
    if result.degraded and result.user_notice:
        return result.user_notice
    if not notify:
        return None
    if result.outcome == "pruned_only":
        return PRUNED_NOTICE
    if result.trigger in ("cold_start", "idle"):
        return PAUSE_NOTICE
    return WINDOW_NOTICE


def compaction_notices(results: Iterable[CompactionResult], *, notify: bool) -> list[str]:
    """One line per compaction worth telling (the same line said once, however many ran)."""
    lines: list[str] = []
    for result in results:
        line = compaction_notice(result, notify=notify)
        if line is not None and line not in lines:
            lines.append(line)
    return lines


def last_compaction_line(record: CompactionRecord | None) -> str:
    """``/status``'s line for the session's newest compaction."""
    if record is None:
        return "Last compaction: none yet"
    reason = TRIGGER_REASONS.get(record.trigger, record.trigger)
    when = f"{record.created_at:%Y-%m-%d %H:%M} UTC"
    return (
        f"Last compaction: {when}, {reason} ({record.outcome}), "
        f"{record.tokens_before:,} -> {record.tokens_after:,} tokens"
    )
