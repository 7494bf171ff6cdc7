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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.engines.message_archive import MessageArchive
from agent.engines.prompt_size import PromptSize
from agent.types import CompactionEstimate, CompactionResult, CompactionTrigger, Message, Usage

CallLLM = Callable[[str, list[Message], int | None], Awaitable[str]]
"""The auxiliary-model call: ``await call_llm(task, messages, max_tokens) -> text``."""


@dataclass(slots=True)
class EngineContext:
    """Everything an engine factory may use to build an engine for one session."""

    context_length: int
    call_llm: CallLLM
    threshold: float = 0.50
    target_ratio: float = 0.20
    protect_last_n: int = 20
    protect_first_n: int = 3
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


class ContextEngine(ABC):
    """Keeps one session's context inside the model's window.

    The agent calls :meth:`update_from_response` after every API call, :meth:`should_compress`
    before the next one, and :meth:`compact` when it says yes (or on hygiene, ``/compress`` and a
    prompt-too-long error). The session's prompt size lives in
    :attr:`prompt_size` (one :class:`PromptSize`, changed only through its methods). Engine
    state that must survive a restart is exchanged through :meth:`get_state` /
    :meth:`load_state`; the host persists it with the session.
    """

    name: str = "engine"
    compacts_in_background: bool = False
    """Whether :meth:`compact` may run on a copy of the engine (built by the host and given
    this one's state) beside the session's turns, its result applied later or dropped: true only
    for an engine whose compaction writes nothing on its own. Such an engine's threshold
    compactions do not hold up a turn whose prompt still fits the window."""

    def __init__(self) -> None:
        self.prompt_size = PromptSize()
        """What the API last reported and what was added since (read by should_compress)."""

    @property
    def last_prompt_tokens(self) -> int | None:
        """The last API-reported prompt size (or a compaction's estimate until the next one)."""
        return self.prompt_size.reported

    # -- token accounting --------------------------------------------------------------
    def update_from_response(self, usage: Usage) -> None:
        """Record the real prompt size the API reported for the last call."""
        self.prompt_size.observe(usage)

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
        goes into the result. The prompt's size before is ``self.prompt_size.current`` (None
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
            self.prompt_size.restore(current_tokens)
        result = await self.compact(messages, "agent", focus_topic)
        self.prompt_size.compacted(result)
        return result.messages

    def estimate_compaction(
        self, messages: Sequence[Message], trigger: CompactionTrigger
    ) -> CompactionEstimate | None:
        """What a compaction by the context policy (``cold_start``, ``idle``) would do, before
        it runs, for the policy to weigh its cost; None (the default) when the engine does not
        compact on those triggers."""
        return None

    # -- optional engine tools ---------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Tool schemas (name, description, input_schema) the engine offers to the model."""
        return []

    async def handle_tool_call(self, name: str, args: dict[str, Any]) -> str:
        """Run one of the engine's own tools and return its text result."""
        raise KeyError(f"context engine {self.name!r} has no tool {name!r}")

    # -- session hooks -----------------------------------------------------------------
    async def on_session_start(self, session_id: int, state: dict[str, Any]) -> None:
        """Called when a session is loaded; ``state`` is what :meth:`get_state` returned last."""
        self.load_state(state)

    async def on_session_end(self, session_id: int) -> None:
        """Called when a session is closed (``/new``) or evicted from memory."""
        return None

    async def forget(self, session_ids: Sequence[int], message_ids: Sequence[int]) -> None:
        """Delete whatever the engine keeps of these sessions and messages (a user asked the
        host to forget them: ``/forget``); the host deletes its own rows right after."""
        return None

    def get_state(self) -> dict[str, Any]:
        """JSON-serialisable state the host persists with the session."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`get_state` returned."""
        return None

    def get_status(self) -> dict[str, Any]:
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
