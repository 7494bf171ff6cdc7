"""The one record of a session's prompt size: what the API last reported, and what came since.

Every part that needs the size reads it here (the engine's ``should_compress``, hygiene,
``/status``); every change goes through one of the methods below, so there is one writer of
the number and one place that says what it means after each event.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.types import CompactionResult, Usage


@dataclass(slots=True)
class PromptSize:
    """The best knowledge of the next prompt's size, in tokens.

    ``reported`` is the real size of the last prompt as the API counted it (after a compaction,
    the estimate of the new context until the next response); ``added`` is the local count of
    messages appended since. None means nothing is known yet (a fresh session).
    """

    reported: int | None = None
    added: int = 0

    @property
    def current(self) -> int | None:
        """The size the next request will have: reported plus what was added since."""
        if self.reported is None:
            return None
        return self.reported + self.added

    def observe(self, usage: Usage) -> None:
        """An API response reported the real prompt size (cache reads and writes included)."""
        self.reported = usage.prompt_tokens
        self.added = 0

    def grow(self, tokens: int) -> None:
        """Messages of ``tokens`` tokens were appended to the context."""
        self.added += tokens

    def compacted(self, result: CompactionResult) -> None:
        """A compaction replaced the context: its estimate stands until the next response."""
        if result.outcome != "skipped":
            self.reported = result.tokens_after
            self.added = 0

    def restore(self, reported: int | None) -> None:
        """Start from a stored size (a session loaded from the store), or from a given one."""
        self.reported = reported
        self.added = 0
