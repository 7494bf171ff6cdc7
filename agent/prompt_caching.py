"""Prompt-cache breakpoints for Claude: where the markers go, and whether to place them at all.

Strategy "system_and_3": one breakpoint on the system prompt, three on the last three messages
that can carry one. Anthropic allows four per request; the cached prefix then reaches up to the
newest message, so the next turn reads everything before it from the cache.

Two wire layouts differ in what can carry a marker:

* native Anthropic (``native_anthropic=True``): every message can. A tool result or a message
  with no content gets a top-level ``cache_control`` that the provider moves onto the right block.
* OpenRouter (content-part layout): only a content part can. A top-level marker on a ``tool``
  message or an empty message is ignored there (and can hang the request), so such messages are
  skipped and the breakpoint goes to the next earlier message that has a content part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.model_table import CACHE_TTLS, lookup_model
from agent.types import Message

MAX_MESSAGE_BREAKPOINTS = 3
"""Breakpoints on conversation messages; the fourth (of Anthropic's four) goes on the system."""


def cache_marker(cache_ttl: str = "5m") -> dict[str, str]:
    """The ``cache_control`` value for a TTL: ``{"type": "ephemeral"}`` plus ``"ttl": "1h"``."""
    if cache_ttl not in CACHE_TTLS:
        raise ValueError(f"cache_ttl must be one of {CACHE_TTLS}, got {cache_ttl!r}")
    if cache_ttl == "1h":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _is_blank_part(part: Any) -> bool:
    """A text part the provider drops (blank), so a marker placed on it would be lost."""
    if isinstance(part, str):
        return not part.strip()
    if isinstance(part, dict) and part.get("type") == "text":
        return not str(part.get("text") or "").strip()
    return False


def _last_markable_part(content: list[Any]) -> int | None:
    """Index of the last content part that survives conversion, or None if there is none."""
    for index in range(len(content) - 1, -1, -1):
        if not _is_blank_part(content[index]):
            return index
    return None


def _has_markable_content(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return _last_markable_part(content) is not None
    return False


def _can_carry_marker(message: Message, native_anthropic: bool) -> bool:
    """Whether this message can hold a breakpoint on the given layout."""
    if native_anthropic:
        return True
    if message.get("role") == "tool":
        return False
    return _has_markable_content(message.get("content"))


def _with_marker(message: Message, marker: dict[str, str], native_anthropic: bool) -> Message:
    """A shallow copy of ``message`` carrying the marker; the original is left untouched.

    Call only for a message that :func:`_can_carry_marker` accepted on the same layout.
    """
    marked = message.copy()
    content = message.get("content")
    top_level_only = native_anthropic and message.get("role") == "tool"
    index = _last_markable_part(content) if isinstance(content, list) else None
    if isinstance(content, str) and content.strip() and not top_level_only:
        marked["content"] = [{"type": "text", "text": content, "cache_control": dict(marker)}]
    elif isinstance(content, list) and index is not None and not top_level_only:
        parts = list(content)
        part = parts[index]
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        parts[index] = {**part, "cache_control": dict(marker)}
        marked["content"] = parts
    else:
        # Native Anthropic only: the provider moves this onto the tool_result or last block.
        marked["cache_control"] = dict(marker)
    return marked


def cache_breakpoints(
    api_messages: Sequence[Message],
    cache_ttl: str = "5m",
    native_anthropic: bool = False,
    *,
    anchor: int | None = None,
    hold: int | None = None,
) -> dict[int, Message]:
    """The marked copies of the (at most four) messages that get a breakpoint, by index.

    ``anchor``: the last message before a change of the history (a clearing or a compaction
    since the previous call). It gets a breakpoint of its own (the tail then two) when it lies
    before the last three messages, so the unchanged prefix up to it is read from the cache
    (an earlier call wrote an entry there when it was the tail) instead of being missed by the
    API's short look-back and written again whole. ``hold``: the last message before where the
    next such change will start (the first tool output a clearing could still shorten); its
    breakpoint keeps a cache entry there, for that change's ``anchor`` to find. Each takes one
    of the tail's three breakpoints when it lies before the tail.

    Only those messages are looked at and copied, so the cost does not grow with the history.
    Raises ValueError for a TTL other than "5m" or "1h".
    """
    marker = cache_marker(cache_ttl)
    marked: dict[int, Message] = {}
    system_index = next(
        (i for i, m in enumerate(api_messages) if m.get("role") == "system"),
        None,
    )
    if system_index is not None and _can_carry_marker(api_messages[system_index], native_anthropic):
        marked[system_index] = _with_marker(api_messages[system_index], marker, native_anthropic)

    remaining = MAX_MESSAGE_BREAKPOINTS
    anchors = {_anchor_index(api_messages, point, native_anthropic) for point in (anchor, hold)}
    anchors.discard(None)
    for anchored in anchors:
        assert anchored is not None
        marked[anchored] = _with_marker(api_messages[anchored], marker, native_anthropic)
        remaining -= 1
    for index in range(len(api_messages) - 1, -1, -1):
        if remaining == 0:
            break
        message = api_messages[index]
        if message.get("role") == "system" or not _can_carry_marker(message, native_anthropic):
            continue
        if index in anchors:
            break  # the tail reached an anchor: the prefix before it is covered
        marked[index] = _with_marker(message, marker, native_anthropic)
        remaining -= 1
    return marked


def _anchor_index(
    api_messages: Sequence[Message], anchor: int | None, native_anthropic: bool
) -> int | None:
    """The message that carries the anchor's breakpoint: the nearest one at or before
    ``anchor`` that can hold one, if it lies before the last three messages (None: no anchor
    needed, the tail's breakpoints reach it)."""
    if anchor is None or anchor >= len(api_messages) - MAX_MESSAGE_BREAKPOINTS:
        return None
    for index in range(anchor, -1, -1):
        message = api_messages[index]
        if message.get("role") == "system":
            return None  # the system breakpoint covers it
        if _can_carry_marker(message, native_anthropic):
            return index
    return None


def apply_anthropic_cache_control(
    api_messages: list[Message], cache_ttl: str = "5m", native_anthropic: bool = False
) -> list[Message]:
    """A new message list with up to four cache breakpoints (system and the last three).

    Never mutates its input: only the marked messages (at most four) are copied; every other
    element of the returned list is the very same dict as in ``api_messages``. The input is
    expected to carry no markers of its own (they would count against Anthropic's limit of four).
    Raises ValueError for a TTL other than "5m" or "1h".
    """
    return MarkedHistory(
        api_messages, cache_breakpoints(api_messages, cache_ttl, native_anthropic)
    ).materialize()


@dataclass(frozen=True, slots=True)
class MarkedHistory:
    """A history with cache-marked copies laid over it, without copying the history.

    ``marked`` maps an index of ``messages`` to the copy sent in its place. This is what a
    per-session provider state (see ``ProviderSession``) converts: the history is the session's
    own list, unchanged between calls except for what was appended.
    """

    messages: Sequence[Message]
    marked: Mapping[int, Message] = field(default_factory=dict)

    def materialize(self) -> list[Message]:
        """The message list as sent: the history with the marked copies in place."""
        result = list(self.messages)
        for index, message in self.marked.items():
            result[index] = message
        return result


@dataclass
class CachePolicy:
    """Whether to place cache breakpoints for a provider and model, and in which layout."""

    enabled: bool
    native_anthropic: bool
    ttl: str
    reason: str


def _is_openrouter(provider: str, base_url: str | None) -> bool:
    return provider == "openrouter" or (base_url is not None and "openrouter.ai" in base_url)


AUTO_TTL = "auto"
"""``prompt_caching.cache_ttl: auto``: each session's tier is chosen from its own gaps."""


def caching_policy(provider: str, model: str, base_url: str | None, cache_ttl: str) -> CachePolicy:
    """The caching decision for a configuration.

    Enabled for Claude models called natively (provider "anthropic") and for Claude models
    reached through OpenRouter (provider "openrouter", or a base URL on openrouter.ai) in the
    content-part layout; disabled otherwise. ``cache_ttl`` is "5m", "1h" or "auto" (the
    session chooses; see ``agent.policy.session_policy``). Raises ValueError for any other TTL.
    """
    if cache_ttl != AUTO_TTL:
        cache_marker(cache_ttl)  # validates the TTL
    is_claude = lookup_model(model).family == "claude"
    if not is_claude:
        return CachePolicy(False, False, cache_ttl, f"model {model} does not support it")
    if provider == "anthropic":
        return CachePolicy(True, True, cache_ttl, "Claude native")
    if _is_openrouter(provider, base_url):
        if model.lower().startswith("anthropic/"):
            return CachePolicy(True, False, cache_ttl, "Claude via OpenRouter")
        return CachePolicy(False, False, cache_ttl, f"OpenRouter model {model} is not anthropic/*")
    return CachePolicy(False, False, cache_ttl, f"provider {provider} does not support it")


def caching_status_line(policy: CachePolicy, session_ttl: str | None = None) -> str:
    """One line for logs and ``/status``.

    For example ``💾 Prompt caching: ENABLED (Claude native, 5m TTL)``; with ``auto``,
    ``auto TTL`` and, for a session (``session_ttl``), the tier it uses now.
    """
    if policy.enabled:
        ttl = f"{policy.ttl} TTL"
        if policy.ttl == AUTO_TTL:
            ttl = (
                f"auto TTL: {session_ttl} now" if session_ttl else "auto TTL: 5m or 1h per session"
            )
        return f"💾 Prompt caching: ENABLED ({policy.reason}, {ttl})"
    return f"💾 Prompt caching: DISABLED ({policy.reason})"
