"""The summary request: its structured template, the middle serialised as text, and chunking.

The middle of a compaction is sent to the auxiliary model as role-tagged lines (tool calls with
their names and arguments, tool results cut to a sane length). When that text would not fit the
summary model's context it is cut into chunks: the first is summarised, then the summary is
updated with each next chunk, so nothing is dropped for lack of room.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from agent.attachments import part_tokens
from agent.engines.toolkit.durable_facts import DURABLE_FACTS_INSTRUCTIONS
from agent.engines.toolkit.tool_output_pruning import UNKNOWN_TOOL
from agent.tokens import cache_message_tokens, count_text_tokens
from agent.types import Message, content_text

TOOL_RESULT_SERIAL_CHARS = 1_500
"""A tool result longer than this is cut (start and end kept) in the summary request."""
TOOL_ARGS_SERIAL_CHARS = 500
"""Tool-call arguments longer than this are cut in the summary request."""
MESSAGE_SERIAL_CHARS = 12_000
"""Any single message longer than this is cut (start and end kept) in the summary request."""
SERIAL_LABEL_TOKENS = 12
"""Allowance for the role tag and tool labels a serialisation adds to a message's own count."""
IMAGE_MARKER_TOKENS = 12
"""An image or document is serialised as its placeholder, not counted at its model cost."""
SPLIT_SAFETY_RATIO = 0.9
"""When a piece must be split to fit a chunk, aim this far under the limit."""
SUMMARY_CONTEXT_MARGIN_RATIO = 0.15
"""Share of the summary model's context kept free: local token counts are only estimates."""

SUMMARY_HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Relevant Files",
    "## Next Steps",
    "## Critical Context",
)

# The instructions avoid digits on purpose: a summary model that copies them would turn them
# into spurious "facts" that then survive every later compaction.
_INSTRUCTIONS = """\
Write a structured summary of the conversation turns below. An AI assistant will continue the \
conversation with your summary in place of those turns, so keep everything it needs: what the \
user asked for and how they want it done, what was done and found, and the exact names of files, \
commands, values and errors that matter.

Use exactly these markdown headings, in this order:
## Goal
(what the user is trying to achieve overall)
## Constraints & Preferences
(requirements, corrections and preferences the user stated, in their own words where possible)
## Progress
### Done
(finished work and its results)
### In Progress
(work started but not finished)
### Blocked
(what is stuck, and why)
## Key Decisions
(decisions taken and the reasons for them)
## Relevant Files
(paths, with what each holds or what changed in it)
## Next Steps
(what remains, in order)
## Critical Context
(exact values, identifiers, error messages: anything that cannot be reconstructed later)

Write only the summary, no preamble. Prefer dense bullets to prose. Keep every instruction and \
correction the user gave: a summary that loses them fails the user."""

_UPDATE_INSTRUCTIONS = """\
A previous summary of even earlier turns is given between <previous-summary> tags. UPDATE that \
summary with the new turns instead of starting over: keep each item that is still true, add \
what the new turns add, and move items from In Progress to Done when the new turns show they \
were finished (and out of Blocked when they were unblocked). Drop an item only when the new \
turns show it was abandoned."""

_PINNED_NOTE = """\
The user's latest request stays verbatim in the conversation right after your summary; some of \
the turns below came after that request, so record their work under Progress."""


@dataclass(frozen=True, slots=True)
class Piece:
    """A serialised message (or part of one) waiting to be summarised.

    ``index`` is the message's position in the middle, so a failure part-way through can hand
    the rest of the middle to the fallback.
    """

    index: int
    text: str
    tokens: int


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    # No count in the marker: a summary model may copy numbers into the summary as facts.
    return f"{text[:head]}\n[... middle omitted ...]\n{text[-tail:]}"


def _tool_call_line(call: dict[str, object], clipped: bool = True) -> str:
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    name = function.get("name") or call.get("name") or UNKNOWN_TOOL
    arguments = function.get("arguments", call.get("input", ""))
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    args = clip(arguments, TOOL_ARGS_SERIAL_CHARS) if clipped else arguments
    return f"[assistant called tool {name}({args}) as call {call.get('id')}]"


def serialize_message(message: Message, tool_names: dict[str, str], *, clipped: bool = True) -> str:
    """One message as role-tagged text for the summary request (long parts cut unless
    ``clipped`` is false)."""
    role = str(message.get("role"))
    text = content_text(message.get("content"))
    if role == "tool":
        call_id = str(message.get("tool_call_id"))
        tool = tool_names.get(call_id) or UNKNOWN_TOOL
        result = clip(text, TOOL_RESULT_SERIAL_CHARS) if clipped else text
        return f"[tool result of {tool} call {call_id}]: {result}"
    body = clip(text, MESSAGE_SERIAL_CHARS) if clipped else text
    lines = [f"[{role}]: {body}"] if text.strip() else []
    lines.extend(_tool_call_line(call, clipped) for call in message.get("tool_calls") or [])
    return "\n".join(lines) or f"[{role}]: (empty)"


def serial_tokens(message: Message, text: str, tool_names: dict[str, str]) -> int:
    """Tokens of ``text``, the serialisation of ``message``, from the message's stored count.

    No re-tokenising: the stored count (images taken out, a label allowance added) is scaled by
    the share of the message's text the serialisation kept. An estimate, like every local count
    (:data:`SUMMARY_CONTEXT_MARGIN_RATIO` keeps room for its error).
    """
    count, attached = _attachment_cost(message.get("content"))
    stored = max(0, cache_message_tokens(message) - attached + count * IMAGE_MARKER_TOKENS)
    whole = len(serialize_message(message, tool_names, clipped=False))
    share = min(1.0, len(text) / whole) if whole else 1.0
    return math.ceil((stored + SERIAL_LABEL_TOKENS) * share)


def _attachment_cost(content: object) -> tuple[int, int]:
    """How many image/document parts the content has, and their tokens in the stored count."""
    if not isinstance(content, list):
        return 0, 0
    costs = [tokens for part in content if (tokens := part_tokens(part)) is not None]
    return len(costs), sum(costs)


def serialize_middle(messages: Sequence[Message], tool_names: dict[str, str]) -> list[Piece]:
    """The middle of a compaction as pieces, one per message, with their token counts."""
    pieces = []
    for index, message in enumerate(messages):
        text = serialize_message(message, tool_names)
        pieces.append(Piece(index, text, serial_tokens(message, text, tool_names)))
    return pieces


def _split_piece(piece: Piece, limit: int) -> tuple[Piece, Piece]:
    """Cut a piece too big for ``limit`` tokens into a part that fits and the rest."""
    chars = max(1, int(len(piece.text) * limit / max(piece.tokens, 1) * SPLIT_SAFETY_RATIO))
    while True:
        first = piece.text[:chars]
        first_tokens = count_text_tokens(first)
        if first_tokens <= limit or chars == 1:
            break
        chars = max(1, int(chars * SPLIT_SAFETY_RATIO))
    rest = piece.text[chars:]
    return Piece(piece.index, first, first_tokens), Piece(
        piece.index, rest, count_text_tokens(rest)
    )


def take_chunk(pieces: Sequence[Piece], limit: int) -> tuple[list[Piece], list[Piece]]:
    """The leading pieces that fit ``limit`` tokens, and the rest (a huge piece is split)."""
    chunk: list[Piece] = []
    used = 0
    for position, piece in enumerate(pieces):
        if used + piece.tokens <= limit:
            chunk.append(piece)
            used += piece.tokens
            continue
        rest = list(pieces[position:])
        if not chunk:
            first, remainder = _split_piece(piece, limit)
            chunk.append(first)
            rest[0] = remainder
        return chunk, rest
    return chunk, []


def render_pieces(pieces: Sequence[Piece]) -> str:
    """The conversation text of a chunk."""
    return "\n\n".join(piece.text for piece in pieces)


def build_summary_prompt(
    conversation: str,
    *,
    previous_summary: str | None = None,
    focus_topic: str | None = None,
    pinned_request: bool = False,
    durable_facts: bool = False,
) -> str:
    """The complete text of one summary request (sent as a single user message); with
    ``durable_facts`` it also asks for the facts worth keeping in memory (after the summary)."""
    parts = [_INSTRUCTIONS]
    if previous_summary:
        parts.append(_UPDATE_INSTRUCTIONS)
    if focus_topic:
        parts.append(
            f"The user asked to give extra detail to: {focus_topic.strip()}. Keep everything "
            "about it in full detail."
        )
    if pinned_request:
        parts.append(_PINNED_NOTE)
    if durable_facts:
        parts.append(DURABLE_FACTS_INSTRUCTIONS)
    if previous_summary:
        parts.append(f"<previous-summary>\n{previous_summary}\n</previous-summary>")
    parts.append(f"<conversation>\n{conversation}\n</conversation>")
    return "\n\n".join(parts)


def conversation_room(
    window: int,
    budget: int,
    *,
    previous_summary: str | None,
    focus_topic: str | None,
    pinned_request: bool,
    durable_facts: bool = False,
) -> int:
    """Tokens of conversation one summary request can carry in a ``window``-token model.

    The rest holds the instructions, the running summary (up to ``budget`` tokens, or the
    previous summary if longer), the ``budget`` tokens of output, and a safety margin.
    """
    margin = int(window * SUMMARY_CONTEXT_MARGIN_RATIO)
    running_summary = max(budget, count_text_tokens(previous_summary or ""))
    instructions = count_text_tokens(
        build_summary_prompt(
            "",
            previous_summary="-",
            focus_topic=focus_topic,
            pinned_request=pinned_request,
            durable_facts=durable_facts,
        )
    )
    return window - budget - margin - running_summary - instructions
