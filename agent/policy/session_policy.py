"""One session's context policy: its visit history, its cache TTL, and the cold-compaction call.

Glue between the pure rule (:mod:`agent.policy.context_policy`), the cost model and what the session
knows: the platform times of its user messages, its prompt size, its engine's estimate of a
compaction. Decisions read only message times (see :mod:`agent.policy.session_clock`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from agent.engines.context_engine import ContextEngine
from agent.model_table import ModelInfo
from agent.policy.context_policy import (
    DEFAULT_MARGIN,
    Decision,
    cache_is_cold,
    should_clear_in_turn,
    should_compact_cold,
    should_prune,
)
from agent.policy.cost_model import TTL_SECONDS, Prices, expected_visit_cost
from agent.policy.visit_history import choose_ttl, expected_turns_per_visit, gaps_between
from agent.types import CompactionEstimate, CompactionTrigger, Message

CACHE_TTL_CHOICES = ("auto", "5m", "1h")
"""``prompt_caching.cache_ttl``: a fixed tier, or ``auto`` (per session, from its gaps)."""
DEFAULT_MAX_WAIT_SECONDS = 0.75
"""Longest a message waits for a compaction in flight before its turn runs without it: with
the turn's own work the reply still comes within about a second."""


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """The context policy's switches (``compression.cold_start``, ``compression.idle``,
    ``prompt_caching.cache_ttl``)."""

    cold_start: bool = True
    idle: bool = True
    cache_ttl: str = "5m"
    caching_enabled: bool = True
    """Without prompt caching there is no cold cache to exploit: the policy stays off."""
    margin: float = DEFAULT_MARGIN
    max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS
    prune_consumed: bool = True
    """At a new message, clear the tool outputs of earlier turns when that pays
    (``compression.prune_tail``)."""
    threshold_in_background: bool = True
    """Compactions the window asks for (threshold, hygiene) run beside the turns while the
    prompt still fits (``compression.threshold_in_background``)."""

    def __post_init__(self) -> None:
        if self.cache_ttl not in CACHE_TTL_CHOICES:
            raise ValueError(
                f"cache_ttl must be one of {CACHE_TTL_CHOICES}, got {self.cache_ttl!r}"
            )

    def enabled_for(self, trigger: CompactionTrigger) -> bool:
        """Whether the policy may compact on ``trigger`` (``cold_start`` or ``idle``)."""
        if not self.caching_enabled:
            return False
        return (
            self.cold_start
            if trigger == "cold_start"
            else self.idle
            if trigger == "idle"
            else False
        )


@dataclass(frozen=True, slots=True)
class PolicyCall:
    """A decision with the estimate it was made on."""

    trigger: CompactionTrigger
    estimate: CompactionEstimate
    decision: Decision


class SessionPolicy:
    """Decides cold-start and idle compactions for one session."""

    def __init__(
        self,
        settings: PolicySettings,
        main: ModelInfo,
        summary: ModelInfo,
        user_times: Sequence[float] = (),
    ) -> None:
        self.settings = settings
        self.main = main
        self.summary = summary
        self._times = sorted(user_times)
        self._chosen: dict[int, str] = {}
        """``auto``: the tier chosen from the first n message times, by n (times only grow)."""

    @property
    def ttl(self) -> str:
        """The cache tier of the session's next requests: fixed, or chosen from its gaps."""
        return self.ttl_at(None)

    @property
    def ttl_seconds(self) -> float:
        return TTL_SECONDS[self.ttl]

    def ttl_at(self, moment: float | None) -> str:
        """The tier the session used for its requests at ``moment`` (None: from now on).

        ``auto`` chooses from the gaps between the user messages up to ``moment``
        (:func:`agent.policy.visit_history.choose_ttl`), so it is a function of message times only:
        a replay picks the same tier at the same message as the live run.
        """
        if self.settings.cache_ttl != "auto":
            return self.settings.cache_ttl
        count = len(self._times) if moment is None else bisect.bisect_right(self._times, moment)
        chosen = self._chosen.get(count)
        if chosen is None:
            chosen = choose_ttl(gaps_between(self._times[:count]))
            self._chosen[count] = chosen
        return chosen

    def note_message(self, sent_at: float | None) -> None:
        """Add a user message's platform time to the history."""
        if sent_at is not None:
            bisect.insort(self._times, float(sent_at))
            self._chosen.clear()

    def cache_is_cold(self, last_call_at: float | None, now: float) -> bool:
        """Whether the prompt cache expired between the session's last model call (at the
        message time ``last_call_at``) and ``now``, on the tier that call was cached with."""
        if last_call_at is None:
            return False
        return cache_is_cold(last_call_at, now, TTL_SECONDS[self.ttl_at(last_call_at)])

    def expected_turns(self, before: float | None = None) -> float:
        """Turns expected in a visit, from the visits finished before ``before``."""
        times = self._times if before is None else [t for t in self._times if t < before]
        return expected_turns_per_visit(times, self.ttl_seconds)

    def decide(
        self,
        engine: ContextEngine,
        context: Sequence[Message],
        *,
        trigger: CompactionTrigger,
        prompt_tokens: int | None,
        last_call_at: float | None,
        now: float,
        requests_per_turn: float = 1.0,
    ) -> PolicyCall | None:
        """The call on a policy compaction now; None when the policy has nothing to weigh
        (off, cache still warm, unknown times, an engine that does not compact this way).

        ``requests_per_turn``: model requests a turn of this session makes (a chat: one; an
        agent at work: one per tool step), so the visit's requests are weighed, not its
        messages: each reads the prompt."""
        if not self.settings.enabled_for(trigger):
            return None
        if not self.cache_is_cold(last_call_at, now):
            return None
        estimate = engine.estimate_compaction(context, trigger)
        if estimate is None:
            return None
        estimate = estimate.scaled_to(prompt_tokens)
        decision = should_compact_cold(
            estimate,
            main=Prices.of(self.main, self.ttl),
            summary=Prices.of(self.summary),
            expected_turns=self.expected_turns(before=now) * max(1.0, requests_per_turn),
            margin=self.settings.margin,
        )
        return PolicyCall(trigger, estimate, decision)

    def prune_decision(
        self, saved_tokens: int, rewritten_tokens: int, *, cold: bool, expected_requests: float
    ) -> Decision:
        """Whether clearing used tool outputs pays now (see :func:`should_prune`): the saving
        counts for the ``expected_requests`` that will read the cleared prompt."""
        return should_prune(
            saved_tokens,
            rewritten_tokens,
            cold=cold,
            main=Prices.of(self.main, self.ttl),
            expected_requests=expected_requests,
            margin=self.settings.margin,
        )

    def step_clearing_decision(
        self, saved_tokens: int, rewritten_tokens: int, waste_tokens: int, remaining: float
    ) -> Decision:
        """Whether clearing used outputs before the next request of a tool loop pays now
        (see :func:`should_clear_in_turn`)."""
        return should_clear_in_turn(
            saved_tokens,
            rewritten_tokens,
            waste_tokens,
            main=Prices.of(self.main, self.ttl),
            remaining_requests=remaining,
            margin=self.settings.margin,
        )

    def late_compaction_pays(
        self,
        prompt_tokens: int,
        compacted_tokens: int,
        requests_done: int,
        visit_start: float,
        *,
        requests_per_turn: float = 1.0,
    ) -> bool:
        """Whether a compaction that finished after ``requests_done`` requests of the visit ran
        on the full prompt still pays: the cache now holds the full prompt (warm), the compacted
        one would be written afresh; the summary is paid for already. The visit is expected to
        make ``requests_per_turn`` requests per turn (one for a chat)."""
        expected = self.expected_turns(before=visit_start) * max(1.0, requests_per_turn)
        remaining = expected - requests_done
        if remaining <= 0 or compacted_tokens >= prompt_tokens:
            return False
        prices = Prices.of(self.main, self.ttl)
        keep = expected_visit_cost(prices, prompt_tokens, cache_warm=True, expected_turns=remaining)
        compacted = expected_visit_cost(
            prices, compacted_tokens, cache_warm=False, expected_turns=remaining
        )
        return compacted < keep
