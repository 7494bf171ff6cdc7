"""Large tool results: stored whole, the context gets their head and tail with a note, and the
model pages through the rest with the built-in ``tool_output(ref, page)`` tool.

No tool output is ever lost (the store has all of it), none floods the window (the context
holds at most about ``max_tokens`` of it). ``tool_output`` is offered from a session's first
request whenever any tool is, so the tool list (the first part of the cached prefix) never
changes because a large result came.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from agent.tokens import count_text_tokens
from agent.tools.registry import Tool, ToolError

DEFAULT_MAX_TOOL_RESULT_TOKENS = 8000
"""About 32 KB of text: a whole source file, a long page or a few hundred log lines fit, and a
result that size costs little (it is re-read from the cache at 0.1x on every later call of the
visit); larger ones are what flooded peers' windows (logs, whole directories, dumps)."""
WINDOW_SHARE = 0.08
"""...and at most this share of the model's window: at 32K a result keeps 2,560 tokens (about
the 10 KB coding agents show the model of a command's output), so the results of one step
(parallel calls) and the rest of a turn always fit the window, and each result written to the
cache stays small where the window is small."""
MIN_RESULT_TOKENS = 500
HEAD_SHARE = 0.7
"""Of the kept part, the head's share; the tail (errors, totals, the end of a log) gets the rest."""
CHARS_PER_TOKEN = 3
"""Conservative characters per token for cutting by characters (real text runs near 4)."""
TOOL_OUTPUT_NAME = "tool_output"


def result_limit(configured: int | str, context_length: int) -> int:
    """Tokens of one result the context keeps: ``agent.max_tool_result_tokens`` as set, or for
    ``"auto"`` :data:`DEFAULT_MAX_TOOL_RESULT_TOKENS`, at most :data:`WINDOW_SHARE` of the
    window (never under :data:`MIN_RESULT_TOKENS`)."""
    if isinstance(configured, int):
        return configured
    share = int(context_length * WINDOW_SHARE)
    return max(MIN_RESULT_TOKENS, min(DEFAULT_MAX_TOOL_RESULT_TOKENS, share))


class ToolOutputStore(Protocol):
    """Where a session's large tool results are kept whole (the gateway's store)."""

    async def save_tool_output(self, session_id: int, tool: str, text: str) -> int:
        """Keep ``text``; returns its id."""

    async def load_tool_output(self, session_id: int, output_id: int) -> str | None:
        """The kept text, None when the session has no output with that id."""

    async def load_tool_result(self, session_id: int, call_id: str) -> str | None:
        """The text of the result of tool call ``call_id`` as it first entered the session's
        context (before any clearing), None when the session has no such call."""

    async def load_tool_input(self, session_id: int, call_id: str) -> str | None:
        """The arguments (JSON text) of tool call ``call_id`` as the model first sent them,
        None when the session has no such call."""


@dataclass(frozen=True, slots=True)
class ToolOutputs:
    """One session's large results: :meth:`clip` before a result enters the context, and the
    ``tool_output`` tool to read the rest."""

    store: ToolOutputStore
    session_id: int
    max_tokens: int = DEFAULT_MAX_TOOL_RESULT_TOKENS

    @property
    def page_chars(self) -> int:
        return self.max_tokens * CHARS_PER_TOKEN

    async def clip(self, tool: str, text: str) -> str:
        """``text`` as it is when it fits, else stored whole and given as head, note, tail."""
        if tool == TOOL_OUTPUT_NAME or len(text) <= self.max_tokens:
            return text  # a page is cut to size already; no text has more tokens than chars
        if count_text_tokens(text) <= self.max_tokens:
            return text
        ref = await self.store.save_tool_output(self.session_id, tool, text)
        keep = self.page_chars
        head, tail = text[: int(keep * HEAD_SHARE)], text[-(keep - int(keep * HEAD_SHARE)) :]
        pages = math.ceil(len(text) / self.page_chars)
        note = (
            f"\n\n[... {len(text) - len(head) - len(tail):,} characters not shown. The whole "
            f"output ({len(text):,} characters, {pages} pages) is kept as ref {ref}: call "
            f'tool_output with {{"ref": {ref}, "page": N}} for page N (1 to {pages}).]\n\n'
        )
        return head + note + tail

    async def page(self, args: dict[str, Any]) -> str:
        """The ``tool_output`` tool: one page of a kept output (``ref``) or of a cleared
        result (``call``)."""
        try:
            page = int(args.get("page", 1))
            ref = int(args["ref"]) if args.get("ref") is not None else None
        except (TypeError, ValueError):
            raise ToolError("ref and page must be whole numbers") from None
        call = args.get("call")
        part = args.get("part", "output")
        if part not in ("output", "input"):
            raise ToolError('part must be "output" or "input"')
        if ref is not None:
            text = await self.store.load_tool_output(self.session_id, ref)
            name = f"output {ref}"
            if text is None:
                raise ToolError(f"no kept tool output {ref} in this conversation")
        elif isinstance(call, str) and call:
            if part == "input":
                text = await self.store.load_tool_input(self.session_id, call)
                name = f"input of call {call}"
            else:
                text = await self.store.load_tool_result(self.session_id, call)
                name = f"result of call {call}"
            if text is None:
                raise ToolError(f"no tool call {call} in this conversation")
        else:
            raise ToolError("give ref (a shortened output) or call (a cleared one)")
        pages = max(1, math.ceil(len(text) / self.page_chars))
        if not 1 <= page <= pages:
            raise ToolError(f"{name} has pages 1 to {pages}")
        start = (page - 1) * self.page_chars
        body = text[start : start + self.page_chars]
        return f"[{name}, page {page} of {pages}]\n{body}"

    def tool(self) -> Tool:
        """The ``tool_output`` tool for the session's registry."""
        return Tool(
            TOOL_OUTPUT_NAME,
            "Read one page of a long tool output that was shortened in the conversation "
            "(its note gives the ref and the number of pages), or of an old one that was "
            'cleared (its line gives the call id; part "input" reads a cleared call input).',
            {
                "type": "object",
                "properties": {
                    "ref": {"type": "integer", "description": "a shortened output's ref"},
                    "call": {"type": "string", "description": "a cleared output's call id"},
                    "page": {"type": "integer", "description": "the page, from 1 (default 1)"},
                    "part": {"type": "string", "enum": ["output", "input"]},
                },
                "required": [],
            },
            self.page,
        )
