"""Where a session's history changed since the last call: the pure part of kept conversions.

Between two calls a session's history only grows, and its cache-marked copies (an overlay, see
:class:`~agent.prompt_caching.MarkedHistory`) move. So the first index whose conversion may
differ is the old length or the first marked index, old or new. Anything else (a compaction,
a reload) is announced by a reset, and caught by spot checks when it is not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from agent.types import Message


def conversation_marks(marked: Mapping[int, Message]) -> dict[int, Message]:
    """The marked copies of conversation messages (system messages are converted apart)."""
    return {index: m for index, m in marked.items() if m.get("role") != "system"}


def first_changed(
    history: Sequence[Message],
    marked: Mapping[int, Message],
    previous_length: int,
    previous_marked: Mapping[int, Message],
) -> int:
    """The first index to convert again, assuming nothing unmarked was edited in place.

    A mark counts as moved unless the same index carries an equal copy in both calls (the
    system prompt's mark, for one, is a fresh but equal copy every call).
    """
    if len(history) < previous_length:
        return 0
    moved = [
        index
        for index in {*marked, *previous_marked}
        if index not in marked
        or index not in previous_marked
        or marked[index] != previous_marked[index]
    ]
    return min([previous_length, *moved])


def spot_check_positions(count: int) -> Iterator[int]:
    """``count - 1``, ``count - 2``, ``count - 4`` ... and ``0``: a few of ``range(count)``,
    dense where edits are likely (the newest) and always including the first."""
    index, step = count - 1, 1
    while index > 0:
        yield index
        index -= step
        step *= 2
    if count > 0:
        yield 0
