"""What a host hands an :class:`~agent.session.AgentSession` when it builds one.

The agent knows nothing of the platform, the database or the configuration file: the host (the
gateway, ``hermes chat``) builds these values from its own and the session is built from them
once. Everything here is a small value or a Protocol of the few calls the session makes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.engines.context_engine import ContextEngine, EngineStatus
from agent.loop import TurnResult
from agent.model_table import ModelInfo
from agent.policy.session_policy import PolicySettings
from agent.prompt_caching import CachePolicy
from agent.providers.base import Provider
from agent.session_context import FactKeeper, TurnRecorder
from agent.spans import NO_SPANS, Spans
from agent.types import CompactionResult, Message


@dataclass(frozen=True, slots=True)
class TurnSource:
    """The platform messages a turn's user text was merged from.

    ``stored_message_id`` is the user message a run interrupted by a crash already stored for
    them (None for a new turn): the turn then resumes instead of storing the text twice.
    """

    platform: str
    platform_message_ids: tuple[str, ...]
    stored_message_id: int | None = None


class SessionRecorder(TurnRecorder, Protocol):
    """The :class:`~agent.session_context.TurnRecorder` with the two calls of a turn's start."""

    def mark_visit_start(self, cold: bool) -> None:
        """Whether the turn about to run found the prompt cache cold (its usage says so)."""

    async def record_user_message(self, message: Message, answers: TurnSource | None) -> int:
        """Store the turn's user message, tied to the platform messages it ``answers``;
        returns its row id."""


class SessionModel(Protocol):
    """The model a session talks to: its facts, its provider and its caching decision."""

    @property
    def info(self) -> ModelInfo:
        """Window, prices, vision of the model."""

    @property
    def provider(self) -> Provider:
        """Where the session's requests go."""

    @property
    def cache_policy(self) -> CachePolicy:
        """Whether and how prompt-cache breakpoints are placed."""

    @property
    def context_length(self) -> int:
        """The model's window in tokens."""


PromptWithMemory = Callable[[str], Awaitable[str]]
"""The system prompt as the host writes it now, from the session's stored base prompt (a
snapshot of the memory added); read only where the prompt cache is cold anyway."""


@dataclass(frozen=True, slots=True)
class SessionPorts:
    """The host's side of one session: where its changes are stored and who pays for them."""

    recorder: SessionRecorder
    """Every new message, usage, tool call and compaction of the session."""
    load_context: Callable[[], Awaitable[list[Message]]]
    """The session's in-context messages as stored (after ``/stop`` cancelled a turn)."""
    save_state: Callable[[dict[str, Any]], Awaitable[None]]
    """Persists the engine's state (summary, cooldowns) with the session."""
    make_engine: Callable[[], ContextEngine]
    """A fresh engine of the session's kind, for a compaction beside the turns."""
    bill_to: Callable[[str | None], None] = lambda user_key: None
    """Whose turn runs now (``platform:user_id``): its calls and summaries are billed to them."""
    system_prompt: PromptWithMemory | None = None
    """The prompt with the memory (None: the stored prompt never changes)."""
    keep_facts: FactKeeper | None = None
    """Where a compaction's durable facts go (None: they are not kept)."""
    spans: Spans = NO_SPANS
    """Where each turn's model calls, tool calls and compactions are traced."""


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """The configured knobs of every session (one value per process)."""

    system_prompt: str
    """The prompt a new session starts with."""
    max_tokens: int
    max_iterations: int
    compression_enabled: bool
    policy: PolicySettings
    summary_model: ModelInfo
    """The summary model's facts (prices), for the context policy's cost model."""


@dataclass(slots=True)
class TurnOutcome:
    """What one turn produced, for the host to deliver."""

    text: str
    compactions: list[CompactionResult] = field(default_factory=list)
    """Every compaction applied since the last turn's outcome (each handed over once)."""
    result: TurnResult | None = None
    """The loop's account of the turn (None: a stored answer a crash left undelivered was
    returned without calling the model)."""
    hygiene: CompactionResult | None = None
    """The window's compaction applied before the turn (hygiene at 85%), if any."""
    policy: CompactionResult | None = None
    """The context policy's compaction applied before the turn (``cold_start``, ``idle``)."""

    @property
    def wait_seconds(self) -> float:
        """Time spent waiting on the model (calls and compactions): the rest is overhead."""
        return self.result.wait_seconds if self.result is not None else 0.0


@dataclass(frozen=True, slots=True)
class SessionStatus:
    """What ``/status`` shows of the agent's side of a session."""

    in_context: int
    prompt_tokens: int | None
    engine_status: EngineStatus
    cache_ttl: str
