"""The pluggable context-engine contract and the engine registry.

A context engine decides when a session's context is too large and how to shrink it.
The built-in engine is :class:`agent.compressor.context_compressor.ContextCompressor`; others
come from
``plugins/context_engine/<name>/`` folders, ``$HERMES_HOME/plugins/context_engine/<name>/``,
Python entry points in the ``hermes.context_engines`` group, or :func:`register_context_engine`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

from agent.engines.message_archive import MessageArchive
from agent.engines.prompt_size import PromptSize
from agent.types import (
    CompactionEstimate,
    CompactionResult,
    CompactionTrigger,
    EngineState,
    Message,
    Usage,
)

CallLLM = Callable[[str, list[Message], int | None], Awaitable[str]]
"""The auxiliary-model call: ``await call_llm(task, messages, max_tokens) -> text``."""

StatusValue: TypeAlias = str | int | float | bool | None
EngineStatus: TypeAlias = dict[str, StatusValue]
"""What ``/status`` shows of an engine: named values, in order (``name=value, ...``)."""


@dataclass(slots=True)
class EngineContext:
    """Everything an engine factory may use to build an engine for one session."""

    context_length: int
    call_llm: CallLLM
    threshold: float = 0.50
    target_ratio: float = 0.20
    protect_last_n: int = 20
    protect_first_n: int = 3
    prune_tail: bool = True
    """Whether tool outputs in the protected tail but beyond its token budget may be cleared
    (``compression.prune_tail``): the newest tool results always stay."""
    enabled: bool = True
    engine_config: dict[str, Any] = field(default_factory=dict)
    """The engine's own section of the config (``context.<name>``)."""
    summary_context_length: int | None = None
    """Context window of the auxiliary summary model, when it differs from the main one."""
    archive: MessageArchive | None = None
    """The host's stored history and the engine's own records (None when the host has no
    store, e.g. in unit tests): the only way an engine reaches the database."""
    clock: Callable[[], float] = time.time
    """The session's time in epoch seconds (its message times, see
    :mod:`agent.policy.session_clock`): what time-based engine decisions such as a cooldown must
    read instead of the wall clock."""
    collect_durable_facts: bool = False
    """Whether the host keeps durable facts from compactions (``memory.flush_on_compaction``):
    an engine then asks its summary request for them too (same call; see
    :mod:`agent.engines.toolkit.durable_facts`) and returns them in
    :attr:`agent.types.CompactionResult.durable_facts`."""


class ContextEngine(ABC):
    """Keeps one session's context inside the model's window.

    The agent calls :meth:`update_from_response` after every API call, :meth:`should_compress`
    before the next one, and :meth:`compact` when it says yes (or on hygiene, ``/compress`` and a
    prompt-too-long error). The engine owns the session's prompt size (a private
    :class:`PromptSize`): the host tells it what happened (:meth:`note_messages_added`,
    :meth:`note_compaction`, :meth:`restore_prompt_size`) and reads
    :attr:`current_prompt_tokens`. Engine state that must survive a restart is a typed
    :class:`~agent.types.EngineState` (:attr:`state_type`), exchanged through
    :meth:`get_state` / :meth:`load_state`; the host persists its JSON with the session.
    """

    name: str = "engine"
    state_type: ClassVar[type[EngineState]] = EngineState
    """The engine's state class: what :meth:`get_state` returns and the host reads stored
    state back as (``state_type.from_json``)."""
    compacts_in_background: bool = False
    """Whether :meth:`compact` may run on a copy of the engine (built by the host and given
    this one's state) beside the session's turns, its result applied later or dropped: true only
    for an engine whose compaction writes nothing on its own. Such an engine's threshold
    compactions do not hold up a turn whose prompt still fits the window."""

    def __init__(self) -> None:
        self._prompt_size = PromptSize()
        """What the API last reported and what was added since (read by should_compress)."""

    # -- prompt size (this engine is its only writer) ----------------------------------
    @property
    def last_prompt_tokens(self) -> int | None:
        """The last API-reported prompt size (or a compaction's estimate until the next one)."""
        return self._prompt_size.reported

    @property
    def current_prompt_tokens(self) -> int | None:
        """The next prompt's size as best known: reported plus what was added since (None
        before any API call reported one)."""
        return self._prompt_size.current

    def update_from_response(self, usage: Usage) -> None:
        """Record the real prompt size the API reported for the last call."""
        self._prompt_size.observe(usage)

    def note_messages_added(self, tokens: int) -> None:
        """Messages of ``tokens`` tokens were appended to the context."""
        self._prompt_size.grow(tokens)

    def note_compaction(self, result: CompactionResult) -> None:
        """A compaction's result became the context: its estimate is the prompt's size until
        the next response reports the real one (a skipped compaction changes nothing)."""
        self._prompt_size.compacted(result)

    def restore_prompt_size(self, tokens: int | None) -> None:
        """Start from a known size: a session loaded from the store, or a copy of an engine."""
        self._prompt_size.restore(tokens)

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Whether the context (``prompt_tokens``, else the last reported size) needs compacting."""

    @abstractmethod
    async def compact(
        self,
        messages: list[Message],
        trigger: CompactionTrigger,
        focus_topic: str | None = None,
    ) -> CompactionResult:
        """Compact ``messages`` (system prompt first) and return what was done.

        The result's ``messages`` is the complete new context; ``trigger`` says why it runs and
        goes into the result. The prompt's size before is :attr:`current_prompt_tokens` (None
        when no API call reported one yet). Never loses a message from the store: messages
        left out of the new context stay stored.
        """

    async def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> list[Message]:
        """The design's thin wrapper over :meth:`compact` (trigger ``"agent"``): the new
        context only. ``current_tokens``, when given, is taken as the prompt's present size."""
        if current_tokens is not None:
            self.restore_prompt_size(current_tokens)
        result = await self.compact(messages, "agent", focus_topic)
        self.note_compaction(result)
        return result.messages

    def estimate_compaction(
        self, messages: Sequence[Message], trigger: CompactionTrigger
    ) -> CompactionEstimate | None:
        """What a compaction by the context policy (``cold_start``, ``idle``) would do, before
        it runs, for the policy to weigh its cost; None (the default) when the engine does not
        compact on those triggers."""
        return None

    def prune_used(self, messages: Sequence[Message]) -> CompactionResult | None:
        """A compaction without a summary (trigger ``prune``) that clears tool outputs the
        model has used already (those of earlier turns; in a long turn, those beyond a recent
        tail); None (the default) when the engine does not prune this way or nothing would go.
        Pure: the host decides whether it pays, and applies it (or ``compact(messages,
        "prune")``, which an engine offering this must answer the same way)."""
        return None

    # -- optional engine tools ---------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Tool schemas (name, description, input_schema) the engine offers to the model."""
        return []

    async def handle_tool_call(self, name: str, args: dict[str, Any]) -> str:
        """Run one of the engine's own tools and return its text result."""
        raise KeyError(f"context engine {self.name!r} has no tool {name!r}")

    # -- session hooks -----------------------------------------------------------------
    async def on_session_start(self, session_id: int, state: EngineState) -> None:
        """Called when a session is loaded; ``state`` is what :meth:`get_state` returned last
        (read back from the store as :attr:`state_type`)."""
        self.load_state(state)

    async def on_session_end(self, session_id: int) -> None:
        """Called when a session is closed (``/new``) or evicted from memory."""
        return None

    async def forget(self, session_ids: Sequence[int], message_ids: Sequence[int]) -> None:
        """Delete whatever the engine keeps of these sessions and messages (a user asked the
        host to forget them: ``/forget``); the host deletes its own rows right after."""
        return None

    def get_state(self) -> EngineState:
        """The state the host persists with the session (its :meth:`EngineState.to_json`)."""
        return self.state_type()

    def load_state(self, state: EngineState) -> None:
        """Restore what :meth:`get_state` returned (convert another engine's state with
        ``MyState.of(state)``)."""
        return None

    def restore_state(self, stored: Mapping[str, Any]) -> None:
        """Restore the state from the JSON the host stored (``get_state().to_json()``)."""
        self.load_state(self.state_type.from_json(stored))

    def get_status(self) -> EngineStatus:
        """Human-readable status for ``/status`` and ``hermes plugins list``."""
        return {"engine": self.name, "last_prompt_tokens": self.last_prompt_tokens}


EngineFactory = Callable[[EngineContext], ContextEngine]

_REGISTRY: dict[str, EngineFactory] = {}


def register_context_engine(name: str, factory: EngineFactory) -> None:
    """Register an engine factory under ``name`` (selected by ``context.engine: <name>``)."""
    if not name or name == "compressor":
        raise ValueError("'compressor' is the built-in engine and cannot be replaced")
    _REGISTRY[name] = factory


def registered_engines() -> dict[str, EngineFactory]:
    """A copy of the engines registered in this process."""
    return dict(_REGISTRY)
