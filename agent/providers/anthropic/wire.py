"""A session's Anthropic request body kept across turns: each turn converts only what is new.

:func:`full_body` is the reference: :func:`~agent.providers.anthropic.convert.to_anthropic_request`
of the whole history, encoded. :class:`AnthropicWireHistory` produces the same bytes by folding
the history one wire turn at a time and keeping, per wire turn, its encoded JSON and the state
the fold had when it started (tool ids taken so far, the calls the turn answers). A new call
rolls back to the first turn that changed (new messages, moved cache markers) and folds on from
there, so a turn costs what it adds.

What may change between calls without :meth:`AnthropicWireHistory.reset`: messages appended,
cache-marked copies (the ``marked`` overlay) anywhere, system messages, the model and
``max_tokens``. Anything else (compaction, edits in place) needs a reset; a history that
shrank, or whose old messages are no longer the same objects, is detected by spot checks and
converted afresh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.providers.anthropic.convert import (
    CONTINUES_PLACEHOLDER,
    assign_wire_ids,
    message_turn,
    pair_user_turn,
    stale_blocks_as_text,
    stale_call_ids,
    strip_prefill,
    system_blocks,
    to_anthropic_request,
    tool_schema,
)
from agent.providers.history_changes import conversation_marks, first_changed, spot_check_positions
from agent.providers.wire_body import EncodedRun, WireBody, dumps_json, object_head
from agent.types import Message

OpenCalls = tuple[tuple[str, str], ...]
"""(original id, wire id) of the tool calls the next user turn must answer."""
StaleIds = frozenset[Any]
"""Ids of calls (and so of their results) sent as text: their tool is not offered."""
_NO_CALLS: OpenCalls = ()
_NO_STALE: StaleIds = frozenset()
"""Shared by every turn with none: one ``_TurnStart`` per wire turn is kept for the life of
the session, and an empty set of its own cost more than the rest of it."""

_CONTINUES_TURN = dumps_json(
    {"role": "user", "content": [{"type": "text", "text": CONTINUES_PLACEHOLDER}]}
)


def _head(model: str, max_tokens: int, system: list[Any], tools: list[Any]) -> bytes:
    """Everything of the body before the ``messages`` array, in the order the body uses."""
    fields: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True}
    if system:
        fields["system"] = system
    if tools:
        fields["tools"] = tools
    return object_head(fields, "messages")


def full_body(
    messages: list[Message], tools: list[dict[str, Any]] | None, *, model: str, max_tokens: int
) -> bytes:
    """The streamed Messages request for ``messages``, converted and encoded in one go."""
    request = to_anthropic_request(messages, tools)
    head = _head(model, max_tokens, request["system"], request["tools"])
    return head + dumps_json(request["messages"]) + b"}"


def _overlaid(history: Sequence[Message], marked: Mapping[int, Message], index: int) -> Message:
    found = marked.get(index)
    return history[index] if found is None else found


class _TakenIds(set[str]):
    """The wire tool ids in use, remembering the order they were taken so a fold can rewind."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []

    def add(self, element: str) -> None:
        super().add(element)
        self.order.append(element)

    def rewind(self, count: int) -> None:
        """Forget every id taken after the first ``count``."""
        for element in self.order[count:]:
            self.discard(element)
        del self.order[count:]


@dataclass(slots=True)
class _TurnStart:
    """Where one wire turn begins, and the fold's state at that point."""

    source_index: int
    source: Message
    """The history's message at ``source_index`` when folded (spot-checked later)."""
    role: str
    taken: int
    open_calls: OpenCalls
    stale: StaleIds
    systems: int


@dataclass(slots=True)
class _Turn:
    """The wire turn being folded."""

    start: _TurnStart
    content: list[dict[str, Any]] = field(default_factory=list)


class AnthropicWireHistory:
    """One session's converted, encoded history; :meth:`body` gives each call's request body."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next body is converted from scratch."""
        self._starts: list[_TurnStart] = []
        self._encoded = EncodedRun()
        self._taken = _TakenIds()
        self._systems: list[int] = []
        self._marked: dict[int, Message] = {}
        self._length = 0
        self._offered: frozenset[str] | None = None
        self._trailing: tuple[OpenCalls, StaleIds] = (_NO_CALLS, _NO_STALE)
        self.converted_messages = 0
        """Messages converted since the last reset (how much the fold really redid)."""

    def body(
        self,
        history: Sequence[Message],
        marked: Mapping[int, Message],
        tools: list[dict[str, Any]] | None,
        *,
        model: str,
        max_tokens: int,
    ) -> WireBody:
        """The body for ``history`` with ``marked`` (cache-marked copies by index) overlaid.

        Equal, byte for byte, to :func:`full_body` of the overlaid history.
        """
        schemas = [tool_schema(t) for t in tools or []]
        offered = frozenset(str(s.get("name")) for s in schemas)
        if offered != self._offered:
            self.reset()
            self._offered = offered
        self._fold_from(self._rollback(self._changed_from(history, marked)), history, marked)
        self._marked = conversation_marks(marked)
        self._length = len(history)
        system = system_blocks([_overlaid(history, marked, i) for i in self._systems])
        pieces = [_head(model, max_tokens, system, schemas), b"["]
        if not self._starts or self._starts[0].role != "user":
            pieces.append(_CONTINUES_TURN + (b"," if self._starts else b""))
        pieces.extend(self._encoded.pieces())
        open_calls, stale = self._trailing
        if open_calls:
            answer: dict[str, Any] = {"role": "user", "content": []}
            pair_user_turn(answer, list(open_calls))
            answer["content"] = stale_blocks_as_text(answer["content"], stale)
            pieces.append(b"," + dumps_json(answer))
        pieces.append(b"]}")
        return WireBody(pieces)

    # -- what changed ---------------------------------------------------------------------
    def _changed_from(self, history: Sequence[Message], marked: Mapping[int, Message]) -> int:
        """The first history index whose conversion may differ from the last call's."""
        first = first_changed(history, conversation_marks(marked), self._length, self._marked)
        for turn in spot_check_positions(self._turn_at(first)):
            start = self._starts[turn]
            if history[start.source_index] is not start.source:
                return 0
        return first

    def _turn_at(self, source_index: int) -> int:
        """Index of the wire turn holding ``source_index`` (the last turn if it is beyond)."""
        low, high = 0, len(self._starts)
        while low < high:
            middle = (low + high) // 2
            if self._starts[middle].source_index <= source_index:
                low = middle + 1
            else:
                high = middle
        return max(0, min(low - 1, len(self._starts) - 1))

    def _rollback(self, source_index: int) -> _TurnStart | None:
        """Drop the turns from the one holding ``source_index``; returns where to fold from."""
        keep = self._encoded.truncate(self._turn_at(source_index))
        if keep == 0:
            start = None
            self._taken.rewind(0)
            del self._systems[:]
        else:
            start = self._starts[keep]
            self._taken.rewind(start.taken)
            del self._systems[start.systems :]
        del self._starts[keep:]
        return start

    # -- folding --------------------------------------------------------------------------
    def _fold_from(
        self, start: _TurnStart | None, history: Sequence[Message], marked: Mapping[int, Message]
    ) -> None:
        open_calls, stale = (start.open_calls, start.stale) if start else (_NO_CALLS, _NO_STALE)
        turn: _Turn | None = None
        for index in range(start.source_index if start else 0, len(history)):
            message = _overlaid(history, marked, index)
            if message.get("role") == "system":
                self._systems.append(index)
                continue
            role, blocks = message_turn(message)
            self.converted_messages += 1
            if turn is not None and turn.start.role == role:
                turn.content.extend(blocks)
                continue
            if turn is not None:
                open_calls, stale = self._close(turn, last=False)
            turn = _Turn(
                _TurnStart(
                    index,
                    history[index],
                    role,
                    len(self._taken.order),
                    open_calls,
                    stale,
                    len(self._systems),
                ),
                list(blocks),
            )
        self._trailing = self._close(turn, last=True) if turn is not None else (open_calls, stale)

    def _close(self, turn: _Turn, *, last: bool) -> tuple[OpenCalls, StaleIds]:
        """Pair, rename and encode a finished wire turn; returns the calls the next one answers."""
        start = turn.start
        message: dict[str, Any] = {"role": start.role, "content": turn.content}
        if start.role == "user":
            pair_user_turn(message, list(start.open_calls))
            open_calls, stale = _NO_CALLS, _NO_STALE
            if start.stale:
                message["content"] = stale_blocks_as_text(message["content"], start.stale)
        else:
            open_calls = tuple(assign_wire_ids(message, self._taken)) or _NO_CALLS
            stale = frozenset(stale_call_ids(message, self._offered or frozenset())) or _NO_STALE
            if stale:
                message["content"] = stale_blocks_as_text(message["content"], stale)
            if last and not open_calls:
                strip_prefill(message)
        self._starts.append(start)
        self._encoded.append(dumps_json(message))
        return open_calls, stale
