"""Summaries for the DAG, with an escalation that always finishes.

Level one asks the auxiliary model for a structured summary; level two asks again with a much
shorter prompt and half the budget; level three cuts the material deterministically and marks
the cut. Each level's output is accepted only when it is shorter (in tokens) than its input, so
a node is always smaller than what it covers, and nothing is lost: the originals stay stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from agent.engines.context_engine import CallLLM
from agent.engines.toolkit.durable_facts import DURABLE_FACTS_INSTRUCTIONS, split_durable_facts
from agent.tokens import count_text_tokens
from agent.types import ProviderError

log = logging.getLogger(__name__)

SUMMARY_TASK = "compression"
"""The auxiliary-model task that writes summaries."""
TRUNCATION_MARKER = "[lcm: summary cut short; lcm_expand this node for the original text]"
SHORT_MARKER = "[cut]"
MAX_MATERIAL_WINDOW_RATIO = 0.6
"""Material sent in one request is cut to this share of the summary model's window."""
CHARS_PER_TOKEN_GUESS = 4
SummaryMode = Literal["model", "short", "truncated"]

OPEN_HEADINGS = ("### In Progress", "### Blocked", "## Next Steps")
"""Sections holding requests that were still open when the summarised turns ended."""

# No digits and none of the words a summariser may take for facts: instructions copied into a
# summary must not turn into "facts" that survive every later condensation.
_LEAF_INSTRUCTIONS = """\
Write a structured summary of the conversation turns below, for an assistant that will see \
your summary instead of those turns (it can still search and reopen the originals).
Use these markdown headings, in this order:
## Goal
## Constraints & Preferences
## Progress
### Done
(requests that were completed in these turns, with their results)
### In Progress
(requests still open when these turns end; leave it empty when none are)
### Blocked
## Key Decisions
## Relevant Files
## Next Steps
## Critical Context
(exact names, values and identifiers that matter)
Write only the summary, dense bullets, no preamble."""

_CONDENSE_INSTRUCTIONS = """\
Write one structured summary that merges the consecutive summaries below (oldest first) into \
one, for an assistant that will see it instead of them (it can still reopen each part).
Use the same markdown headings as the parts. An item that an older part lists under \
In Progress may have been finished later: when a later part shows it done, list it under Done \
only. Keep exact names, values and identifiers.
Write only the summary, dense bullets, no preamble."""

_SHORT_INSTRUCTIONS = """\
Write a short structured summary of the text below: the headings ## Goal, ### Done, \
### In Progress and ## Critical Context, a few bullets each, exact values kept. No preamble."""


@dataclass(frozen=True, slots=True)
class SummaryText:
    """A summary and how it was produced (``model``, ``short`` prompt or ``truncated``)."""

    text: str
    mode: SummaryMode
    detail: str = ""
    facts: tuple[str, ...] = ()
    """Durable facts the request returned beside the summary (leaf summaries, when asked)."""


class Summarizer:
    """Writes node summaries through ``call_llm``; after two failed calls in a row it stops
    asking the model for the rest of its life (one compaction), so a dead model costs little.

    With ``durable_facts``, a leaf summary's request (the one that reads the conversation itself)
    also asks for the facts worth keeping in the host's memory, in the same call."""

    MAX_CONSECUTIVE_FAILURES = 2

    def __init__(
        self, call_llm: CallLLM | None, window_tokens: int, *, durable_facts: bool = False
    ) -> None:
        self._call_llm = call_llm
        self._window = window_tokens
        self._failures = 0
        self._durable_facts = durable_facts

    async def summarize(
        self, material: str, input_tokens: int, target_tokens: int, *, condensed: bool
    ) -> SummaryText:
        """A summary of ``material`` shorter than ``input_tokens``; never raises."""
        material = _fit_material(material, int(self._window * MAX_MATERIAL_WINDOW_RATIO))
        cap = max(1, min(target_tokens, input_tokens - 1))
        instructions = _CONDENSE_INSTRUCTIONS if condensed else _LEAF_INSTRUCTIONS
        short = _SHORT_INSTRUCTIONS
        if self._durable_facts and not condensed:
            instructions = f"{instructions}\n{DURABLE_FACTS_INSTRUCTIONS}"
            short = f"{short}\n{DURABLE_FACTS_INSTRUCTIONS}"
        attempts: list[tuple[SummaryMode, str, int]] = [
            ("model", instructions, cap),
            ("short", short, max(1, cap // 2)),
        ]
        reasons: list[str] = []
        for mode, prompt, budget in attempts:
            text, reason = await self._ask(prompt, material, budget, input_tokens)
            if text is not None:
                text, facts = split_durable_facts(text) if self._durable_facts else (text, [])
                return SummaryText(text, mode, "; ".join(reasons), tuple(facts))
            reasons.append(f"{mode}: {reason}")
        detail = "; ".join(reasons)
        log.warning("lcm summary truncated deterministically (%s)", detail)
        return SummaryText(truncate_with_marker(material, max(1, cap // 2)), "truncated", detail)

    async def _ask(
        self, instructions: str, material: str, budget: int, input_tokens: int
    ) -> tuple[str | None, str]:
        """One model call; the text when it is usable, else None and why not."""
        if self._call_llm is None:
            return None, "no summary model"
        if self._failures >= self.MAX_CONSECUTIVE_FAILURES:
            return None, "summary model failing"
        prompt = f"{instructions}\n\n<conversation>\n{material}\n</conversation>"
        try:
            text = await self._call_llm(SUMMARY_TASK, [{"role": "user", "content": prompt}], budget)
        except (ProviderError, TimeoutError, OSError) as exc:
            self._failures += 1
            return None, f"{type(exc).__name__}: {exc}"
        self._failures = 0
        text = (text or "").strip()
        summary = split_durable_facts(text)[0] if self._durable_facts else text
        if not summary:
            return None, "empty reply"
        tokens = count_text_tokens(summary)
        if tokens >= input_tokens:
            return None, f"reply of {tokens} tokens is not shorter than its input ({input_tokens})"
        return text, ""


def _fit_material(material: str, max_tokens: int) -> str:
    """Material cut (start and end kept) to about ``max_tokens`` for one request."""
    if count_text_tokens(material) <= max_tokens:
        return material
    keep = max_tokens * CHARS_PER_TOKEN_GUESS
    head = keep * 3 // 4
    return f"{material[:head]}\n[...]\n{material[-(keep - head) :]}"


def truncate_with_marker(text: str, max_tokens: int) -> str:
    """The start of ``text`` and a marker, together at most ``max_tokens`` tokens."""
    marker = TRUNCATION_MARKER if count_text_tokens(TRUNCATION_MARKER) * 2 < max_tokens else ""
    marker = marker or (SHORT_MARKER if count_text_tokens(SHORT_MARKER) < max_tokens else "")
    room = max_tokens - count_text_tokens(marker) - (1 if marker else 0)
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits the room left beside the marker
        middle = (low + high + 1) // 2
        if count_text_tokens(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    prefix = text[:low].rstrip()
    return f"{prefix}\n{marker}".strip() if marker else prefix


def split_open_items(summary: str) -> tuple[str, str]:
    """A summary without its open-request sections, and those sections on their own.

    Assembly shows open items only from the newest node, so an old "in progress" request does
    not take over a resumed session.
    """
    kept: list[str] = []
    open_lines: list[str] = []
    in_open = False
    for line in summary.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            in_open = any(stripped.startswith(h) for h in OPEN_HEADINGS)
        (open_lines if in_open else kept).append(line)
    return "\n".join(kept).strip(), "\n".join(open_lines).strip()
