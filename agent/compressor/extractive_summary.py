"""The deterministic summary used when the summary model cannot be used.

When the auxiliary model fails (overloaded, timing out, context too small) a compaction must
still not lose the thread, so this builds a summary mechanically from the compacted messages:
the previous summary kept whole, then the user's requests, lines that read like decisions, file
paths mentioned anywhere, and the first lines of the most recent tool results. It needs no
network, always finishes, and stays within its token budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.toolkit.tool_output_pruning import UNKNOWN_TOOL, first_line
from agent.tokens import count_text_tokens
from agent.types import Message, content_text

EXTRACTIVE_HEADER = (
    "Extractive summary: the summary model was unavailable, so this was compiled mechanically "
    "from the compacted messages. The originals are kept in the session history."
)
USER_REQUEST_CHARS = 300
"""Each user request is quoted up to this many characters."""
DECISION_LINE_CHARS = 200
"""Each decision line is quoted up to this many characters."""
RECENT_TOOL_RESULTS = 8
"""How many of the most recent tool results are listed."""
MIN_NEW_CONTENT_SHARE = 4
"""The extracted sections always get at least budget // this, even after a long previous
summary."""
DECISION_MARKERS = (
    "decided",
    "decision",
    "we will",
    "we'll",
    "i will",
    "i'll",
    "let's",
    "plan:",
    "chose",
    "agreed",
    "instead of",
)
FILE_PATH_PATTERN = re.compile(
    r"(?<![\w.-])(?:~?/)?(?:[\w.-]+/)*[\w-]+\.(?:py|pyi|md|txt|rst|yaml|yml|json|toml|cfg|ini|"
    r"sql|sh|js|ts|tsx|jsx|css|html|rs|go|java|c|h|cpp|hpp|rb|php|csv|log|env|lock)\b"
)


def _decision_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        stripped = line.strip().lstrip("-*• ").strip()
        if stripped and any(marker in stripped.lower() for marker in DECISION_MARKERS):
            lines.append(stripped[:DECISION_LINE_CHARS])
    return lines


def _dedupe(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _collect(messages: Sequence[Message], tool_names: dict[str, str]) -> dict[str, list[str]]:
    """Candidate items per section, oldest first."""
    requests: list[str] = []
    decisions: list[str] = []
    files: list[str] = []
    results: list[str] = []
    for message in messages:
        role = message.get("role")
        text = content_text(message.get("content"))
        files.extend(match.group(0) for match in FILE_PATH_PATTERN.finditer(text))
        for call in message.get("tool_calls") or []:
            arguments = str((call.get("function") or {}).get("arguments", ""))
            files.extend(match.group(0) for match in FILE_PATH_PATTERN.finditer(arguments))
        if role == "user" and text.strip():
            requests.append(" ".join(text.split())[:USER_REQUEST_CHARS])
        elif role == "assistant":
            decisions.extend(_decision_lines(text))
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            tool = tool_names.get(call_id) or UNKNOWN_TOOL
            results.append(f"{tool} call {call_id}: {first_line(text) or '(empty)'}")
    return {
        "## User Requests": _dedupe(requests),
        "## Key Decisions": _dedupe(decisions),
        "## Relevant Files": _dedupe(files),
        "## Recent Tool Results": results[-RECENT_TOOL_RESULTS:],
    }


def _fit(sections: dict[str, list[str]], budget: int) -> dict[str, list[str]]:
    """Keep the newest items of each section, in section order, while they fit ``budget``."""
    kept: dict[str, list[str]] = {heading: [] for heading in sections}
    used = 0
    for heading, items in sections.items():
        heading_cost = count_text_tokens(heading) + 1
        for item in reversed(items):
            cost = count_text_tokens(item) + 2 + (heading_cost if not kept[heading] else 0)
            if used + cost > budget:
                continue  # a shorter, older item may still fit
            used += cost
            kept[heading].insert(0, item)
    return kept


def extractive_summary(
    messages: Sequence[Message],
    *,
    budget_tokens: int,
    previous_summary: str | None = None,
    tool_names: dict[str, str] | None = None,
) -> str:
    """A summary of ``messages`` built without a model, within about ``budget_tokens``.

    The previous summary is kept whole (it was already in the context); the extracted sections
    share what is left of the budget, never less than a quarter of it.
    """
    names = tool_names or {}
    parts = [EXTRACTIVE_HEADER]
    if previous_summary:
        parts.append(f"## Previous Summary\n{previous_summary.strip()}")
    spent = count_text_tokens("\n\n".join(parts))
    room = max(budget_tokens - spent, budget_tokens // MIN_NEW_CONTENT_SHARE)
    for heading, items in _fit(_collect(messages, names), room).items():
        if items:
            parts.append("\n".join([heading, *(f"- {item}" for item in items)]))
    return "\n\n".join(parts)
