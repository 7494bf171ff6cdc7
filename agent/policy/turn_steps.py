"""How many model requests a turn makes: the session's own history, and what is left of a turn.

A chat turn is one request; an agent at work makes one request per tool step, 20 to 50 of them
for a real task. Whether clearing the tool outputs the model has used pays *inside* a turn
depends on how many more requests this turn will make (each reads the prompt again), which the
session's past turns tell: :func:`expected_remaining_requests` is the mean of what was left of
the past turns that ran longer than this one has so far, shrunk towards a prior that a turn
which ran ``n`` requests runs about ``n`` more (with no history, or when this turn is already
the longest). :class:`TurnSteps` keeps the history from the context, reading only the messages
appended since it last looked.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from agent.engines.toolkit.boundaries import is_summary_message
from agent.types import Message

TURN_HISTORY = 50
"""The most recent turns the history keeps: habits change with the work."""
PRIOR_WEIGHT_TURNS = 1.0
"""How many turns' worth of evidence the prior counts for."""
DEFAULT_REQUESTS_PER_TURN = 1.0
"""A session with no finished turn is assumed to chat (one request a turn)."""


def expected_remaining_requests(
    finished: Sequence[int], done: int, *, prior_weight: float = PRIOR_WEIGHT_TURNS
) -> float:
    """Requests a turn that has made ``done`` requests is still expected to make (the next
    one included).

    ``finished``: how many requests the session's finished turns made. The turns that ran
    longer than ``done`` say how much longer; the prior (``done`` more, at least one) keeps a
    single past turn from deciding alone and answers when none ran longer.
    """
    longer = [count - done for count in finished if count > done]
    prior = max(1.0, float(done))
    return (sum(longer) + prior * prior_weight) / (len(longer) + prior_weight)


def mean_requests_per_turn(finished: Sequence[int]) -> float:
    """The mean requests of the finished turns (one when there are none)."""
    return sum(finished) / len(finished) if finished else DEFAULT_REQUESTS_PER_TURN


class TurnSteps:
    """The session's requests per turn, read incrementally from its context.

    An assistant message is one request's answer; a user message (not a summary) starts a turn.
    A compaction replaces the context: the turns it kept are not counted again; the scan goes
    on from the newest user message.
    """

    def __init__(self) -> None:
        self.finished: deque[int] = deque(maxlen=TURN_HISTORY)
        """Requests of the finished turns, oldest first."""
        self.current = 0
        """Requests the turn in progress has made."""
        self._scanned = 0
        self._first: Message | None = None
        self._turn_start: Message | None = None

    def observe(self, messages: Sequence[Message]) -> None:
        """Read the messages appended since the last look."""
        first = messages[0] if messages else None
        start = 0
        if first is not self._first or len(messages) < self._scanned:
            # A new context (a compaction, or the first look): on the first look every turn
            # in it counts; after a compaction, only what follows the turns counted already.
            start = 0 if self._first is None else self._resume_after_compaction(messages)
            self._first = first
        else:
            start = self._scanned
        for message in messages[start:]:
            self._read(message)
        self._scanned = len(messages)

    def _read(self, message: Message) -> None:
        role = message.get("role")
        if role == "assistant":
            self.current += 1
        elif role == "user" and not is_summary_message(message):
            if self.current:
                self.finished.append(self.current)
            self.current = 0
            self._turn_start = message

    def _resume_after_compaction(self, messages: Sequence[Message]) -> int:
        """Where to go on reading a compacted context: after its newest user message when that
        is the turn in progress (its requests are counted from there again), else at that
        message, which then starts a new turn (the previous one finished)."""
        last_user = next(
            (
                index
                for index in range(len(messages) - 1, -1, -1)
                if messages[index].get("role") == "user" and not is_summary_message(messages[index])
            ),
            None,
        )
        if last_user is None:
            return len(messages)
        if messages[last_user] is self._turn_start:
            self.current = 0
            return last_user + 1
        return last_user

    def remaining(self) -> float:
        """Requests the turn in progress is still expected to make (the next one included)."""
        return expected_remaining_requests(self.finished, self.current)

    def per_turn(self) -> float:
        """Mean requests per finished turn (one before any turn finished)."""
        return mean_requests_per_turn(self.finished)
