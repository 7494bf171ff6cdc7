"""``hermes chat`` asks before a tool in an MCP server's ``ask`` list runs: a ``y/n/a`` prompt
in the terminal (a scripted chat reads the answer as its next input line).

``y`` allows this call, ``a`` allows the tool in this chat from now on (stored, like the
chat platforms' "Always in this chat"), anything else denies; no answer within
``mcp.approval_timeout_seconds`` denies too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TextIO

from agent.tools.approvals import Decision, ToolCallPreview
from gateway.store.ports import ApprovalStore

APPROVAL_QUESTION = "approve> {tool} {arguments}\napprove> allow? [y]es once, [a]lways here, [n]o: "
ANSWERS: dict[str, Decision] = {"y": "once", "yes": "once", "a": "always", "always": "always"}
LineReader = Callable[[str], Awaitable[str | None]]
"""Shows a question, returns the answer line (None at the end of input)."""


class TerminalApprovals:
    """The approval port of a terminal chat."""

    def __init__(
        self,
        store: ApprovalStore,
        chat_id: str,
        read_line: LineReader,
        out: TextIO,
        timeout_seconds: float,
    ) -> None:
        self._store = store
        self._chat_id = chat_id
        self._read_line = read_line
        self._out = out
        self._timeout_seconds = timeout_seconds
        self._lock = asyncio.Lock()  # one question at a time, even for parallel calls

    async def decide(self, call: ToolCallPreview) -> Decision:
        """Ask at the terminal (or find the tool allowed here for good)."""
        async with self._lock:
            if await self._store.tool_always_allowed("cli", self._chat_id, call.tool):
                return "always"
            question = APPROVAL_QUESTION.format(tool=call.tool, arguments=call.preview())
            try:
                async with asyncio.timeout(self._timeout_seconds):
                    line = await self._read_line(question)
            except TimeoutError:
                print("\napprove> no answer in time: denied", file=self._out, flush=True)
                return "timeout"
            decision = ANSWERS.get((line or "").strip().lower(), "deny")
            if decision == "always":
                await self._store.allow_tool_always("cli", self._chat_id, call.tool, None)
            return decision
