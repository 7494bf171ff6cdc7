"""Session hygiene: compact an oversized session before the agent runs.

The gateway's safety net under the agent's own compressor: a session that came back from a long
night, or whose model was switched to a smaller one, is compacted before the turn starts instead
of failing it. The decision is a pure function; the compaction itself is the active engine's.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.tokens import estimate_messages_tokens_rough
from agent.types import Message

HYGIENE_THRESHOLD = 0.85
"""Fraction of the model's context at which hygiene compacts (fixed by design)."""
HYGIENE_MIN_MESSAGES = 4
"""Below this many messages there is nothing worth compacting."""


def hygiene_prompt_tokens(messages: Sequence[Message], last_prompt_tokens: int | None) -> int:
    """The last API-reported prompt size when known, else a rough character estimate."""
    if last_prompt_tokens:
        return last_prompt_tokens
    return estimate_messages_tokens_rough(messages)


def needs_hygiene(
    messages: Sequence[Message],
    *,
    last_prompt_tokens: int | None,
    context_length: int,
    compression_enabled: bool,
) -> bool:
    """Whether the session must be compacted before the next agent turn."""
    if not compression_enabled or len(messages) < HYGIENE_MIN_MESSAGES:
        return False
    tokens = hygiene_prompt_tokens(messages, last_prompt_tokens)
    return tokens >= context_length * HYGIENE_THRESHOLD
