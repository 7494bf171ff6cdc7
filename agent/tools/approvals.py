"""Asking the user before a tool runs: the port a host hands the turn, and what the model is
told when the user said no.

A tool marked ``ask`` (an MCP server's ``ask`` list) runs only after the turn's
:class:`ApprovalPort` said so. The host builds the port for the turn it starts (it knows the
chat, who wrote the message and who may answer for them) and passes it explicitly to
``AgentLoop.run_turn``; a turn without one runs no such tool. The agent knows nothing of
buttons, chats or the database: the port answers with a :data:`Decision`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Decision = Literal["once", "always", "deny", "timeout"]
"""Allow this call; allow this tool in this chat from now on; deny; no answer in time (deny)."""

ALLOWING: frozenset[Decision] = frozenset({"once", "always"})
PREVIEW_CHARS = 300
"""How much of a call's arguments a prompt shows (never the whole of a large argument)."""

DENIED_RESULT = "The user denied this call; it was not run."
TIMED_OUT_RESULT = "The user did not answer the approval request in time; the call was not run."
NOT_ASKED_RESULT = "The user's approval could not be asked (sending the request failed); not run."
NO_ONE_TO_ASK_RESULT = "This tool needs the user's approval, which cannot be asked here; not run."


@dataclass(frozen=True, slots=True)
class ToolCallPreview:
    """One call waiting for approval: the tool's name as the model called it, and its
    arguments (shown only as a bounded :meth:`preview`)."""

    tool: str
    arguments: dict[str, Any]

    def preview(self, limit: int = PREVIEW_CHARS) -> str:
        """The arguments as compact JSON, cut to ``limit`` characters (with an ellipsis)."""
        text = json.dumps(self.arguments, ensure_ascii=False, separators=(", ", ": "))
        return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


class ApprovalPort(Protocol):
    """Asks whoever may answer for this turn whether a call may run."""

    async def decide(self, call: ToolCallPreview) -> Decision:
        """The user's decision (``timeout`` when no one answered in time)."""


def refusal_result(decision: Decision) -> str:
    """The tool result the model gets for a call that was not allowed."""
    return TIMED_OUT_RESULT if decision == "timeout" else DENIED_RESULT
