"""What a loaded session costs in memory, estimated from its context without walking objects.

A loaded message is kept twice: as the chat-completions dict of the context (its text, its
bookkeeping keys) and as its encoded JSON in the provider session's request body, beside a few
small objects per wire turn. Measured with tracemalloc (Python 3.11, Anthropic wire history): a
message of 45 characters (17 tokens) holds 655 bytes (405 its dict, 250 its wire turn), one of
1,843 characters (317 tokens) 4,284. The estimate, 700 bytes plus 12 per token, is a little
above both; it uses the token count each message already carries (``"_tokens"``), so it costs
a dict lookup per message.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.tokens import estimate_message_tokens_rough
from agent.types import Message

BYTES_PER_LOADED_MESSAGE = 700
"""A loaded message's fixed cost: its dict and bookkeeping, its wire turn's objects."""
BYTES_PER_LOADED_TOKEN = 12
"""A loaded message's cost per token of its text: the text and its encoded copy."""
BYTES_PER_MB = 1024 * 1024


def loaded_message_bytes(message: Message) -> int:
    """The estimated memory one loaded message holds (its counted tokens, else a rough count)."""
    tokens = message.get("_tokens")
    if not isinstance(tokens, int):
        tokens = estimate_message_tokens_rough(message)
    return BYTES_PER_LOADED_MESSAGE + BYTES_PER_LOADED_TOKEN * tokens


def loaded_context_bytes(context: Iterable[Message]) -> int:
    """The estimated memory of a loaded session's context (see the module docstring)."""
    return sum(loaded_message_bytes(message) for message in context)
