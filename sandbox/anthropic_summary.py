"""The emulator's deterministic answer to a "structured summary" (compaction) request.

The summary has the headings a compaction prompt asks for. Its Critical Context section keeps
the lines of the request (system and messages) that look like facts (they mention "remember" or
"fact", or contain a digit), deduplicated; when the summary would not fit ``max_tokens`` the
oldest facts are dropped first, so the newest survive and the limit is never exceeded. The fixed
wording contains no digits, so a summary fed into the next compaction does not breed new "facts".

When the request also asks for durable facts (its instructions mention the ``<durable-facts>``
tag), the summary is followed by that section: every user line of the conversation that asks to
remember something, as the fact itself ("[user]: Please remember that X" gives "X").
"""

from __future__ import annotations

import re
from typing import Any

from sandbox.anthropic_prompt import list_field, message_blocks, system_blocks, text_tokens

SUMMARY_TRIGGER = "structured summary"
FACT_WORDS = ("remember", "fact")
CONSTRAINT_WORDS = ("prefer", "always", "never", "must", "don't", "do not")
DECISION_WORDS = ("decided", "decision", "agreed", "chose")
MAX_LINE_CHARS = 200
MAX_SECTION_LINES = 5
FILE_PATTERN = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)*[\w-]+\.(?:py|md|txt|yaml|yml|json|toml|cfg|ini|sql|sh|js|ts)\b"
)
NONE_RECORDED = "- None recorded."
FACTS_OPEN = "<durable-facts>"
FACTS_CLOSE = "</durable-facts>"
USER_TAG = "[user]:"
REMEMBER_REQUEST = re.compile(r"^(?:please\s+)?remember\s*(?:that\b|:)?\s*", re.IGNORECASE)


def is_summary_request(last_user_text: str) -> bool:
    """Whether the last user text asks for a structured summary."""
    return SUMMARY_TRIGGER in last_user_text.lower()


def _message_text(message: dict[str, Any]) -> str:
    parts: list[str] = []
    for block in message_blocks(message.get("content")):
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            nested = block.get("content")
            if isinstance(nested, str):
                parts.append(nested)
            else:
                parts.extend(
                    str(part.get("text", ""))
                    for part in message_blocks(nested)
                    if part.get("type") == "text"
                )
    return "\n".join(parts)


def conversation_lines(body: dict[str, Any]) -> list[str]:
    """Every non-empty line of the request (system, then messages), bullets stripped.

    Oldest first; the instruction lines that ask for the summary are left out.
    """
    texts = [str(block.get("text", "")) for block in system_blocks(body.get("system"))]
    texts += [_message_text(m) for m in list_field(body, "messages") if isinstance(m, dict)]
    lines: list[str] = []
    for text in texts:
        for raw in text.splitlines():
            line = raw.strip().lstrip("-*•>").strip()[:MAX_LINE_CHARS]
            if line and SUMMARY_TRIGGER not in line.lower() and FACTS_OPEN not in line:
                lines.append(line)
    return lines


def _dedupe(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    unique = []
    for line in lines:
        if line not in seen:
            seen.add(line)
            unique.append(line)
    return unique


def fact_lines(lines: list[str]) -> list[str]:
    """The lines that look like facts worth keeping, deduplicated, oldest first."""
    return _dedupe(
        [
            line
            for line in lines
            if any(word in line.lower() for word in FACT_WORDS) or any(ch.isdigit() for ch in line)
        ]
    )


def _matching(lines: list[str], words: tuple[str, ...]) -> list[str]:
    found = _dedupe([line for line in lines if any(word in line.lower() for word in words)])
    return found[-MAX_SECTION_LINES:]


def _bullets(lines: list[str]) -> list[str]:
    return [f"- {line}" for line in lines] or [NONE_RECORDED]


def _head(lines: list[str]) -> str:
    files = _dedupe([match.group(0) for line in lines for match in FILE_PATTERN.finditer(line)])
    sections = [
        "## Goal",
        "- Continue the user's task from the conversation so far.",
        "## Constraints & Preferences",
        *_bullets(_matching(lines, CONSTRAINT_WORDS)),
        "## Progress",
        "### Done",
        "- Earlier conversation summarized.",
        "### In Progress",
        "- Continuing from the latest request.",
        "### Blocked",
        "- Nothing reported.",
        "## Key Decisions",
        *_bullets(_matching(lines, DECISION_WORDS)),
        "## Relevant Files",
        *_bullets(files[-MAX_SECTION_LINES:]),
        "## Next Steps",
        "- Answer the most recent user message.",
        "## Critical Context",
    ]
    return "\n".join(sections)


def asks_for_durable_facts(body: dict[str, Any]) -> bool:
    """Whether the request's instructions ask for a durable-facts section."""
    messages = [m for m in list_field(body, "messages") if isinstance(m, dict)]
    return any(FACTS_OPEN in _message_text(m) for m in messages[-1:])


def durable_facts(lines: list[str]) -> list[str]:
    """The facts the user asked to keep: their "remember ..." lines, the request words cut."""
    facts = []
    for line in lines:
        if line.startswith(USER_TAG) and "remember" in line.lower():
            fact = REMEMBER_REQUEST.sub("", line[len(USER_TAG) :].strip()).strip()
            if fact:
                facts.append(fact[0].upper() + fact[1:])
    return _dedupe(facts)


def structured_summary(body: dict[str, Any], max_tokens: int) -> str:
    """A markdown summary of the request's conversation that fits ``max_tokens``, followed by
    the durable-facts section when the request asks for one.

    Facts are added newest first while they fit, then listed oldest first. If even the
    fixed headings do not fit, the caller's max_tokens truncation cuts the text.
    """
    lines = conversation_lines(body)
    if asks_for_durable_facts(body):
        section = "\n".join([FACTS_OPEN, *(f"- {f}" for f in durable_facts(lines)), FACTS_CLOSE])
        summary = _summary_of(lines, max_tokens - text_tokens(section) - 1)
        return f"{summary}\n{section}"
    return _summary_of(lines, max_tokens)


def _summary_of(lines: list[str], max_tokens: int) -> str:
    head = _head(lines)
    kept: list[str] = []
    for fact in reversed(fact_lines(lines)):
        candidate = "\n".join([head, *(f"- {line}" for line in [fact, *kept])])
        if text_tokens(candidate) > max_tokens:
            break
        kept.insert(0, fact)
    return "\n".join([head, *_bullets(kept)])
