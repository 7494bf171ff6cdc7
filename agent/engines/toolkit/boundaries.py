"""Where a compaction cuts: head, tail, the compacted middle, and tool-pair repair.

Pure functions over a message list and its per-message token counts. A tool call and its results
form a *group* (an assistant message with ``tool_calls`` followed by consecutive ``tool``
messages); no cut ever falls inside a group, so the kept context never shows a call without its
results or a result without its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent.types import Message, without_bookkeeping

SUMMARY_KIND = "summary"
"""``"_kind"`` of a summary message written by a compaction."""
SUMMARY_PREFIX = (
    "[Context summary: earlier turns of this conversation were compacted; the original messages "
    "are kept in the session history. Treat this as background: the most recent user message "
    "says what to do now.]\n\n"
)
"""Every summary message starts with this text, so it is recognised even without ``"_kind"``."""
SYSTEM_COMPACTION_NOTE = (
    "\n\n[Note: earlier turns of this conversation have been compacted into a summary message; "
    "the original messages are kept in the session history.]"
)
"""Appended to the system prompt at the first compaction (once: the prompt cache survives)."""
COMPACTED_RESULT_STUB = "[Result not available: compacted]"
"""Content of the stub result given to a kept tool call whose result was compacted away."""


def is_summary_message(message: Message) -> bool:
    """Whether ``message`` is a summary written by an earlier compaction."""
    if message.get("_kind") == SUMMARY_KIND:
        return True
    content = message.get("content")
    return isinstance(content, str) and content.startswith(SUMMARY_PREFIX)


def summary_text(message: Message) -> str:
    """The text of a summary message without its prefix."""
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    return text[len(SUMMARY_PREFIX) :] if text.startswith(SUMMARY_PREFIX) else text


def tool_call_ids(message: Message) -> list[str]:
    """Ids of the tool calls an assistant message makes (empty for any other message)."""
    if message.get("role") != "assistant":
        return []
    return [str(call.get("id")) for call in message.get("tool_calls") or []]


def group_start(messages: Sequence[Message], index: int, floor: int = 0) -> int:
    """Start of the group containing ``index``: walk back over tool results to their call."""
    while index > floor and messages[index].get("role") == "tool":
        index -= 1
    return index


def align_head_forward(messages: Sequence[Message], end: int) -> int:
    """Move a head cut forward past tool results, so the head keeps whole groups."""
    end = min(end, len(messages))
    while end < len(messages) and messages[end].get("role") == "tool":
        end += 1
    return end


def tail_start_by_budget(
    messages: Sequence[Message], sizes: Sequence[int], floor: int, budget: int
) -> int:
    """Start of the tail walked back group by group while it fits ``budget`` tokens.

    The last group is always in the tail, whatever its size.
    """
    start = len(messages)
    used = 0
    while start > floor:
        first = group_start(messages, start - 1, floor)
        group_tokens = sum(sizes[first:start])
        if start < len(messages) and used + group_tokens > budget:
            break
        used += group_tokens
        start = first
    return start


def tail_start_by_count(messages: Sequence[Message], floor: int, count: int) -> int:
    """Start of a tail of at least ``count`` messages, aligned to a group start."""
    start = max(floor, len(messages) - count)
    return group_start(messages, start, floor) if start < len(messages) else start


def last_user_index(messages: Sequence[Message], floor: int) -> int | None:
    """Index of the last user message at or after ``floor`` (None when there is none)."""
    for index in range(len(messages) - 1, floor - 1, -1):
        if messages[index].get("role") == "user" and not is_summary_message(messages[index]):
            return index
    return None


def _alternation_role(message: Message | None) -> str | None:
    """The role a message counts as for user/assistant alternation.

    Tool results travel as user turns on Anthropic, and the first turn after the system prompt
    should be a user turn, so a system prompt counts as an assistant turn here.
    """
    if message is None:
        return None
    role = message.get("role")
    return {"tool": "user", "system": "assistant"}.get(str(role), role)


def choose_summary_role(before: Message | None, after: Message | None) -> str | None:
    """A role for the summary that differs from both neighbours, "user" preferred; else None."""
    taken = {_alternation_role(before), _alternation_role(after)}
    for role in ("user", "assistant"):
        if role not in taken:
            return role
    return None


@dataclass(frozen=True, slots=True)
class CompactionLayout:
    """Which messages a compaction keeps and which it summarises.

    The new context is ``messages[:head_end]``, the summary, ``messages[pinned]`` (the last user
    request, kept when it lies too far back to keep everything after it) and
    ``messages[tail_start:]``. Everything else between the head and the tail is the middle.
    Tool outputs from ``protected_start`` (the tail as the budget chose it) on are never
    cleared; a tail start moved only to make roles alternate does not protect more outputs.
    """

    head_end: int
    tail_start: int
    pinned: tuple[int, int] | None = None
    summary_role: str | None = None
    protected_start: int | None = None

    @property
    def prune_end(self) -> int:
        """Tool outputs before this index (after the first exchange) may be cleared."""
        return self.tail_start if self.protected_start is None else self.protected_start

    @property
    def kept_after_summary(self) -> int:
        """Index of the first message kept after the summary."""
        return self.pinned[0] if self.pinned else self.tail_start

    def middle_indices(self) -> list[int]:
        """Indices of the messages the summary stands for, in order."""
        indices = list(range(self.head_end, self.tail_start))
        if self.pinned:
            low, high = self.pinned
            indices = [i for i in indices if not low <= i < high]
        return indices


def plan_layout(
    messages: Sequence[Message],
    sizes: Sequence[int],
    *,
    protect_first_n: int,
    protect_last_n: int,
    tail_token_budget: int,
    threshold_tokens: int,
    summary_reserve: int = 0,
) -> CompactionLayout:
    """Choose head, tail and middle for a compaction of ``messages`` (token ``sizes`` given).

    Head: the first ``protect_first_n`` messages, extended over a group they split, stopping
    before an earlier summary. Tail: the larger of a ``tail_token_budget`` walk and the last
    ``protect_last_n`` messages, always reaching back to the last user message. When head, tail
    and a summary of ``summary_reserve`` tokens would not fit under ``threshold_tokens``, the
    tail shrinks to the token budget; if the last user request then lies outside it, it is
    pinned (kept verbatim) rather than summarised.
    """
    head_end = align_head_forward(messages, protect_first_n)
    for index in range(1, head_end):
        if is_summary_message(messages[index]):
            head_end = index
            break
    if head_end >= len(messages):
        return CompactionLayout(head_end=len(messages), tail_start=len(messages))
    head_tokens = sum(sizes[:head_end])
    by_budget = tail_start_by_budget(messages, sizes, head_end, tail_token_budget)
    tail_start = min(by_budget, tail_start_by_count(messages, head_end, protect_last_n))
    last_user = last_user_index(messages, head_end)
    if last_user is not None:
        tail_start = min(tail_start, last_user)
    pinned: tuple[int, int] | None = None
    # What is kept must stay under ``room`` strictly: a prompt exactly at the threshold would
    # ask for another compaction at once.
    room = threshold_tokens - summary_reserve
    if head_tokens + sum(sizes[tail_start:]) >= room:
        tail_start = by_budget
        if last_user is not None and last_user < tail_start:
            if head_tokens + sum(sizes[last_user:]) < room:
                tail_start = last_user
            else:
                pinned = (last_user, last_user + 1)
    planned = CompactionLayout(head_end, tail_start, pinned)
    fitted = _fit_summary_role(messages, sizes, planned, tail_token_budget, room)
    return replace(fitted, protected_start=tail_start)


def _role_candidates(
    messages: Sequence[Message], first: CompactionLayout
) -> list[CompactionLayout]:
    """Layouts that differ from ``first`` by where the part kept after the summary starts:
    group by group earlier (keeping more), then, when no request is pinned, group by group
    later up to the last user message or the last group (summarising more)."""
    head_end, pinned = first.head_end, first.pinned
    start = first.kept_after_summary
    candidates = []
    while start - 1 > head_end:
        start = group_start(messages, start - 1, head_end)
        if pinned:
            candidates.append(CompactionLayout(head_end, first.tail_start, (start, pinned[1])))
        else:
            candidates.append(CompactionLayout(head_end, start))
    if not pinned and first.tail_start < len(messages):
        last_user = last_user_index(messages, first.tail_start)
        limit = last_user if last_user is not None else group_start(messages, len(messages) - 1)
        start = first.tail_start + 1
        while start <= limit:
            if messages[start].get("role") != "tool":
                candidates.append(CompactionLayout(head_end, start))
            start += 1
    return candidates


def _fit_summary_role(
    messages: Sequence[Message],
    sizes: Sequence[int],
    layout: CompactionLayout,
    max_move_tokens: int,
    room: int,
) -> CompactionLayout:
    """Pick the summary's role so it alternates with both neighbours.

    When no role does, move the start of what is kept after the summary to the group start
    where one does that moves the fewest tokens (earlier on a tie), at most ``max_move_tokens``,
    and never keeping so much more that the kept messages no longer fit under ``room`` (the
    compaction would then not bring the prompt under the threshold). When there is none (say a
    request in the head followed only by tool loops), keep the layout with a "user" summary:
    providers merge same-role turns.
    """
    head_end, pinned = layout.head_end, layout.pinned
    if pinned and pinned[0] <= head_end:
        head_end, pinned = pinned[1], None  # nothing before the pinned request: head owns it
    first = CompactionLayout(head_end, layout.tail_start, pinned)
    if not first.middle_indices():
        return first
    before = messages[head_end - 1] if head_end > 0 else None
    best: tuple[int, int, CompactionLayout] | None = None
    for candidate in [first, *_role_candidates(messages, first)]:
        after_index = candidate.kept_after_summary
        after = messages[after_index] if after_index < len(messages) else None
        role = choose_summary_role(before, after)
        if role is None or not candidate.middle_indices():
            continue
        # The cheapest move wins: the fewest tokens kept or summarised beyond the plan; one
        # that moves more than the tail budget would defeat the compaction.
        low, high = sorted((after_index, first.kept_after_summary))
        keeps_more = after_index < first.kept_after_summary
        if keeps_more and _kept_tokens(sizes, candidate) >= room:
            continue
        rank = (sum(sizes[low:high]), int(after_index > first.kept_after_summary))
        if rank[0] <= max_move_tokens and (best is None or rank < best[:2]):
            best = (*rank, CompactionLayout(head_end, candidate.tail_start, candidate.pinned, role))
    if best is not None:
        return best[2]
    return CompactionLayout(head_end, first.tail_start, first.pinned, "user")


def _kept_tokens(sizes: Sequence[int], layout: CompactionLayout) -> int:
    """Tokens of the messages ``layout`` keeps verbatim (all but its middle)."""
    return sum(sizes) - sum(sizes[i] for i in layout.middle_indices())


def with_system_note(message: Message) -> Message:
    """A new system message: the original content with the compaction note appended."""
    content = message.get("content")
    if isinstance(content, str) and SYSTEM_COMPACTION_NOTE in content:
        return message
    copy = without_bookkeeping(message)
    if isinstance(content, list):
        copy["content"] = [*content, {"type": "text", "text": SYSTEM_COMPACTION_NOTE.strip()}]
    else:
        copy["content"] = (content or "") + SYSTEM_COMPACTION_NOTE
    return copy


def assemble_context(
    messages: Sequence[Message], layout: CompactionLayout, summary: Message, *, note: bool
) -> list[Message]:
    """Head, summary, pinned request and tail of ``messages``, with tool pairs repaired;
    with ``note``, the system prompt gets :data:`SYSTEM_COMPACTION_NOTE`."""
    head = list(messages[: layout.head_end])
    if note and head and head[0].get("role") == "system":
        head[0] = with_system_note(head[0])
    pinned = list(messages[layout.pinned[0] : layout.pinned[1]]) if layout.pinned else []
    return repair_tool_pairs([*head, summary, *pinned, *messages[layout.tail_start :]])


def repair_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """Drop tool results whose call is gone and give calls whose results are gone a stub.

    A result counts as answering a call only in the block of tool messages right after the
    calling assistant message. Calls in the very last message are left alone: their results
    are still to come.
    """
    repaired: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.get("role") == "tool":
            continue  # a result not directly after its call: its call was compacted away
        repaired.append(message)
        call_ids = tool_call_ids(message)
        if not call_ids:
            continue
        answered: set[str] = set()
        while index < len(messages) and messages[index].get("role") == "tool":
            result = messages[index]
            index += 1
            call_id = str(result.get("tool_call_id"))
            if call_id in call_ids and call_id not in answered:
                answered.add(call_id)
                repaired.append(result)
        if index >= len(messages) and not answered:
            continue  # the newest call: results are pending, not lost
        repaired.extend(
            {"role": "tool", "tool_call_id": call_id, "content": COMPACTED_RESULT_STUB}
            for call_id in call_ids
            if call_id not in answered
        )
    return repaired
