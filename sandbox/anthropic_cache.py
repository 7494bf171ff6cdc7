"""Prompt-cache accounting of the Anthropic emulator, following the documented rules.

Entries are stored only at breakpoint positions, keyed by the prefix key (which includes the
model). On each request the longest live entry is looked up at every breakpoint and at up to
``CACHE_LOOKBACK_BLOCKS`` blocks before it; its tokens are read and its TTL refreshed. Every
later breakpoint whose prefix reaches the model's minimum cacheable length is then written with
its own TTL. Expiry follows the emulator's `ManualClock`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sandbox.anthropic_prompt import Prompt
from sandbox.clock import ManualClock

CACHE_LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
DEFAULT_MIN_CACHEABLE_TOKENS = 1_024

# Minimum cacheable prefix per model family, first match wins. Sources disagree on some
# models; these follow the project's reference page.
_MIN_CACHEABLE_BY_PATTERN: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"haiku-4"), 4_096),
    (re.compile(r"claude-3(-\d+)?-haiku"), 2_048),
    (re.compile(r"opus-4-([5-9]|\d{2,})|opus-[5-9]"), 4_096),
    (re.compile(r"sonnet|opus"), 1_024),
)


def min_cacheable_tokens_for(model: str, override: int | dict[str, int] | None = None) -> int:
    """The minimum prefix length that can be cached for ``model``.

    ``override`` is the emulator's constructor setting: one number for every model, or a dict
    keyed by model id or id prefix (the longest matching prefix wins) that falls back to the
    built-in table.
    """
    if isinstance(override, int):
        return override
    if isinstance(override, dict):
        matches = [prefix for prefix in override if model.startswith(prefix)]
        if matches:
            return override[max(matches, key=len)]
    for pattern, minimum in _MIN_CACHEABLE_BY_PATTERN:
        if pattern.search(model):
            return minimum
    return DEFAULT_MIN_CACHEABLE_TOKENS


@dataclass(frozen=True)
class CacheUsage:
    """How a prompt's tokens split between uncached input, cache reads and cache writes."""

    input_tokens: int
    cache_read_input_tokens: int = 0
    cache_creation_5m_tokens: int = 0
    cache_creation_1h_tokens: int = 0

    @property
    def cache_creation_input_tokens(self) -> int:
        """Tokens written to the cache, both TTLs together."""
        return self.cache_creation_5m_tokens + self.cache_creation_1h_tokens

    @property
    def prompt_tokens(self) -> int:
        """The prompt's full size: input + cache read + cache write."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def to_api(self, output_tokens: int) -> dict[str, Any]:
        """The ``usage`` object of a Messages API response."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_creation_5m_tokens,
                "ephemeral_1h_input_tokens": self.cache_creation_1h_tokens,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }


@dataclass
class _CacheEntry:
    ttl: str
    expires_at: float


class PromptCache:
    """The emulator's prompt cache: which prefixes are live, and what each request reads/writes."""

    def __init__(self, clock: ManualClock) -> None:
        self._clock = clock
        self._entries: dict[str, _CacheEntry] = {}

    def __len__(self) -> int:
        self._drop_expired()
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()

    def account(self, prompt: Prompt, min_cacheable_tokens: int) -> CacheUsage:
        """Read and write the cache for one request and return its usage split."""
        self._drop_expired()
        hit = self._longest_hit(prompt)
        read_tokens = prompt.prefix_tokens[hit] if hit is not None else 0
        if hit is not None:
            entry = self._entries[prompt.blocks[hit].key]
            entry.expires_at = self._clock.now() + TTL_SECONDS[entry.ttl]
        written = {"5m": 0, "1h": 0}
        covered = read_tokens
        for index in prompt.breakpoints:
            if hit is not None and index <= hit:
                continue
            if prompt.prefix_tokens[index] < min_cacheable_tokens:
                continue
            block = prompt.blocks[index]
            ttl = block.cache_ttl or "5m"
            self._entries[block.key] = _CacheEntry(ttl, self._clock.now() + TTL_SECONDS[ttl])
            written[ttl] += prompt.prefix_tokens[index] - covered
            covered = prompt.prefix_tokens[index]
        return CacheUsage(
            input_tokens=prompt.total_tokens - covered,
            cache_read_input_tokens=read_tokens,
            cache_creation_5m_tokens=written["5m"],
            cache_creation_1h_tokens=written["1h"],
        )

    def _longest_hit(self, prompt: Prompt) -> int | None:
        best: int | None = None
        for breakpoint_index in prompt.breakpoints:
            lowest = max(0, breakpoint_index - CACHE_LOOKBACK_BLOCKS)
            for index in range(breakpoint_index, lowest - 1, -1):
                if best is not None and index <= best:
                    break
                if prompt.blocks[index].key in self._entries:
                    best = index
                    break
        return best

    def _drop_expired(self) -> None:
        now = self._clock.now()
        expired = [key for key, entry in self._entries.items() if entry.expires_at <= now]
        for key in expired:
            del self._entries[key]
