"""Durable facts from a summary request: what to ask for, and how the reply is split.

When the host keeps memory (``memory.flush_on_compaction``), an engine's summary request also
asks for the facts worth keeping beyond the session, in the same call: they come back after the
summary between ``<durable-facts>`` tags, one ``- `` bullet each. :func:`split_durable_facts`
separates them from the summary, so the summary the engine keeps never holds the section.
"""

from __future__ import annotations

import re

FACTS_OPEN = "<durable-facts>"
FACTS_CLOSE = "</durable-facts>"
MAX_FACT_CHARS = 300
"""A longer line is no short memory entry: it is left out."""
MAX_FACTS_PER_SUMMARY = 10
"""At most this many facts are taken from one summary reply (a runaway list is cut)."""

# One paragraph (the emulators recognise it by its tag). No digits, on purpose: a summary model
# that copies them would turn them into spurious facts.
DURABLE_FACTS_INSTRUCTIONS = (
    f"After the summary, add a section {FACTS_OPEN} ... {FACTS_CLOSE} listing, one per line "
    "starting with '- ', the durable facts about the user (or this group) worth knowing in "
    "later, unrelated conversations: names, preferences, decisions, standing instructions. "
    "Each a short self-contained sentence, only what the user stated or confirmed, nothing "
    "about the task at hand; leave the section empty when there are none."
)

_SECTION = re.compile(
    re.escape(FACTS_OPEN) + r"(.*?)(?:" + re.escape(FACTS_CLOSE) + r"|\Z)", re.DOTALL
)


def split_durable_facts(reply: str) -> tuple[str, list[str]]:
    """The summary without its durable-facts section, and the facts listed there (in order,
    bullets and blank lines dropped, overlong lines left out)."""
    facts: list[str] = []
    for match in _SECTION.finditer(reply):
        for line in match.group(1).splitlines():
            fact = " ".join(line.strip().lstrip("-*•").split())
            if fact and len(fact) <= MAX_FACT_CHARS and fact not in facts:
                facts.append(fact)
    summary = _SECTION.sub("", reply).strip()
    return summary, facts[:MAX_FACTS_PER_SUMMARY]
