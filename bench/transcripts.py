"""Synthetic multi-day conversations for the overnight-cost replay, from a seeded generator.

People leave a chat with the bot open for days: they come back for a *visit* (a few to a few
dozen messages, 20-150 s apart, as fast as they read and type), then nothing for hours or days.
This module makes such a set, deterministically from a seed, with the shapes that decide what
prompt caching costs:

- visits days apart (log-normal gaps, median a day and a half, never under six hours), so the
  cache has always expired at a visit's first message;
- human pace inside a visit (uniform 20-150 s between messages), so a 5-minute cache stays warm;
- message lengths from log-normal distributions (most user messages a sentence or two, a few
  long pastes; replies a short paragraph, some much longer), each under Telegram's 4,096-character
  limit so that one message is one update and one reply is one message;
- a scripted reply per message, so the conversation grows as it would with a real model;
- one long system prompt (about 1,800 tokens) shared by every conversation.

Token counts here are the emulator's (4 characters a token), so a message of ``n`` tokens costs
``n`` tokens in the replay's accounting.

    python -m bench.transcripts --seed 7     # prints the set's shape
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sandbox.anthropic_prompt import CHARS_PER_TOKEN, text_tokens

DAY_SECONDS = 86_400
START_EPOCH = int(datetime(2026, 9, 1, 8, tzinfo=UTC).timestamp())
"""The first conversation's first visit starts within a few days of this."""
MAX_MESSAGE_TOKENS = 800
"""About 3,200 characters: a message or reply always fits one Telegram message."""
MIN_CONVERSATION_TURNS = 20

_WORDS = (
    "the a to and of in for on with that this it is was be can will would should could have "
    "has had do does did not but or if so when then than as at by from about into over after "
    "before again still just also only very more most some any each every other such same "
    "I you we they he she my your our their me us them what which who how why where "
    "time day week plan trip train ticket hotel room booking price budget list note draft email "
    "letter report meeting call project deadline task idea question answer problem reason "
    "garden recipe dinner lunch coffee bread oven flour sugar salt butter onion tomato sauce "
    "book chapter story poem word sentence paragraph title summary version change edit "
    "morning evening night weekend holiday family friend child parent school class lesson "
    "work office team client invoice payment account bank card order delivery package "
    "weather rain wind sun walk run bike car bus street city village mountain river lake "
    "doctor appointment medicine sleep health exercise habit routine goal progress step "
    "good better best bad worse small large long short early late quick slow easy hard "
    "new old next last first second final main simple clear useful careful exact rough "
    "think know want need like try make take give keep find tell ask help show start finish "
    "write read send check fix move plan cook buy pay call meet visit bring choose compare"
).split()

_SYSTEM_PROMPT_RULES = (
    "Answer in the language the user writes in, and match their tone.",
    "Prefer short paragraphs and plain words; use a list only when the user asks for steps.",
    "When a request is ambiguous, ask one precise question instead of guessing.",
    "Never invent facts about the user; use only what they told you in this conversation.",
    "Keep track of the user's plans, preferences and corrections, and honour them later.",
    "When you give a number, say where it comes from and how sure you are.",
    "If the user pastes a long text, answer about that text and do not repeat it back.",
    "Do not lecture; one caveat is enough when a caveat is needed at all.",
    "Offer a next step only when it is obviously useful.",
    "Respect privacy: never ask for passwords, card numbers or identity documents.",
)


@dataclass(frozen=True)
class TranscriptSpec:
    """The shape of a generated set; the defaults match the measured real conversations."""

    conversations: int = 10
    turns: int = 3_000
    """User messages over all conversations together."""
    turns_per_visit: float = 11.0
    """Mean messages per visit (about 270 visits for the default 3,000 turns)."""
    min_gap_seconds: int = 20
    max_gap_seconds: int = 150
    """Seconds between two messages of one visit (uniform)."""
    visit_gap_median_days: float = 1.5
    visit_gap_sigma: float = 0.6
    min_visit_gap_seconds: int = 6 * 3_600
    max_visit_gap_seconds: int = 7 * DAY_SECONDS
    user_tokens_median: float = 18.0
    user_tokens_sigma: float = 0.9
    reply_tokens_median: float = 60.0
    reply_tokens_sigma: float = 0.6
    system_prompt_tokens: int = 1_800

    @classmethod
    def quick(cls) -> TranscriptSpec:
        """A small set for a quick look: three conversations, long enough to compact at 32K."""
        return cls(conversations=3, turns=600)


WORKBENCH = "work"
"""The tool workload's MCP server (:mod:`sandbox.mcp_workbench`): its tools reach the model as
``work__read_file`` and so on."""
_ARGUMENT_NAMES = {
    "read_file": "path",
    "edit_file": "path",
    "run_command": "command",
    "fetch_page": "url",
}


@dataclass(frozen=True)
class ToolCall:
    """One call of a workbench tool, and how many tokens its output has."""

    tool: str
    """``read_file``, ``edit_file``, ``run_command`` or ``fetch_page``."""
    argument: str
    output_tokens: int
    note_tokens: int = 0
    """The text the model writes before the call (what it does next); 0: none."""
    input_tokens: int = 0
    """The text an edit sends (``edit_file``'s ``new_text``); 0 for the other tools."""

    @property
    def name(self) -> str:
        """The tool's name as the model calls it."""
        return f"{WORKBENCH}__{self.tool}"

    def arguments(self) -> dict[str, str]:
        """The call's arguments as the model sends them (an edit's text is deterministic
        prose of ``input_tokens``, from its argument)."""
        arguments = {_ARGUMENT_NAMES[self.tool]: self.argument}
        if self.tool == "edit_file":
            rng = random.Random(f"edit:{self.argument}")
            arguments["new_text"] = ProseWriter(rng).prose(self.input_tokens)
        return arguments


@dataclass(frozen=True)
class Turn:
    """One user message and the reply the scripted model gives to it (after its tool calls,
    if it makes any)."""

    conversation: int
    index: int
    """Position in its conversation, from 0."""
    sent_at: int
    """Epoch seconds (whole seconds, as Telegram dates are)."""
    text: str
    reply: str
    visit_start: bool
    """The first message of a visit (after a gap of hours or days)."""
    steps: tuple[tuple[ToolCall, ...], ...] = ()
    """The model's tool calls before its reply: one model response per step, the calls of a
    step made together (parallel tool use)."""

    @property
    def tool_calls(self) -> int:
        """How many tools the model calls for this message."""
        return sum(len(step) for step in self.steps)


@dataclass(frozen=True)
class Conversation:
    """One person's chat with the bot over days."""

    index: int
    turns: tuple[Turn, ...]

    @property
    def visits(self) -> int:
        """How many visits the conversation has."""
        return sum(turn.visit_start for turn in self.turns)


@dataclass(frozen=True)
class TranscriptSet:
    """Every conversation of one seed, plus the system prompt they share."""

    seed: int
    spec: TranscriptSpec
    system_prompt: str
    conversations: tuple[Conversation, ...]
    timeline: tuple[Turn, ...] = field(default=())
    """Every turn of every conversation in time order (ties: by conversation)."""

    @property
    def turns(self) -> int:
        """User messages in the whole set."""
        return sum(len(c.turns) for c in self.conversations)

    @property
    def visits(self) -> int:
        """Visits in the whole set."""
        return sum(c.visits for c in self.conversations)

    @property
    def tool_calls(self) -> int:
        """Tool calls the set's turns make (0 for a chat set)."""
        return sum(turn.tool_calls for turn in self.timeline)

    def describe(self) -> str:
        """One line with the set's shape."""
        days = (self.timeline[-1].sent_at - self.timeline[0].sent_at) / DAY_SECONDS
        user = sum(text_tokens(t.text) for t in self.timeline)
        reply = sum(text_tokens(t.reply) for t in self.timeline)
        return (
            f"seed {self.seed}: {len(self.conversations)} conversations, {self.turns} turns, "
            f"{self.visits} visits over {days:.0f} days; user messages {user / self.turns:.0f} "
            f"tokens on average, replies {reply / self.turns:.0f}; system prompt "
            f"{text_tokens(self.system_prompt)} tokens{self._tools_described()}"
        )

    def _tools_described(self) -> str:
        calls = [call for turn in self.timeline for step in turn.steps for call in step]
        if not calls:
            return ""
        sizes = sorted(call.output_tokens for call in calls)
        per_visit = len(calls) / max(1, self.visits)
        return (
            f"; {len(calls)} tool calls ({per_visit:.1f} a visit), outputs {sizes[0]:,} to "
            f"{sizes[-1]:,} tokens (median {sizes[len(sizes) // 2]:,}, total {sum(sizes):,})"
        )


class ProseWriter:
    """Random prose of a given token length, from the seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def sentence(self) -> str:
        """One sentence of 5-16 words."""
        words = [self._rng.choice(_WORDS) for _ in range(self._rng.randint(5, 16))]
        return " ".join(words).capitalize() + self._rng.choice((".", ".", ".", "?", "!"))

    def prose(self, tokens: int) -> str:
        """Sentences until the text reaches ``tokens`` tokens, cut to exactly that length."""
        target_chars = tokens * CHARS_PER_TOKEN
        parts: list[str] = []
        length = 0
        while length < target_chars:
            parts.append(self.sentence())
            length += len(parts[-1]) + 1
        return " ".join(parts)[:target_chars].rstrip()

    def exchange(self, spec: TranscriptSpec) -> tuple[str, str]:
        """A user message and the scripted reply to it, of the spec's log-normal lengths."""
        text = self.prose(self.length(spec.user_tokens_median, spec.user_tokens_sigma))
        return text, self.prose(self.length(spec.reply_tokens_median, spec.reply_tokens_sigma))

    def length(self, median: float, sigma: float) -> int:
        """A log-normal token count, clamped to what one Telegram message holds."""
        drawn = self._rng.lognormvariate(math.log(median), sigma)
        return max(2, min(MAX_MESSAGE_TOKENS, round(drawn)))


def _split(total: int, parts: int, rng: random.Random, sigma: float, minimum: int) -> list[int]:
    """``total`` cut into ``parts`` log-normally sized pieces of at least ``minimum`` each."""
    weights = [rng.lognormvariate(0.0, sigma) for _ in range(parts)]
    spare = total - minimum * parts
    sizes = [minimum + math.floor(spare * w / sum(weights)) for w in weights]
    for index in range(total - sum(sizes)):
        sizes[index % parts] += 1
    return sizes


def system_prompt(tokens: int, rng: random.Random) -> str:
    """A persona and house rules, padded with background notes to about ``tokens`` tokens."""
    head = "You are Hermes, a helpful assistant people reach from their chat apps.\n" + "\n".join(
        f"- {rule}" for rule in _SYSTEM_PROMPT_RULES
    )
    notes = ProseWriter(rng).prose(max(0, tokens - text_tokens(head) - 8))
    return f"{head}\n\nBackground notes:\n{notes}"


def visit_gap(spec: TranscriptSpec, rng: random.Random) -> int:
    """Seconds from one visit's last message to the next visit's first (log-normal days)."""
    gap_days = rng.lognormvariate(math.log(spec.visit_gap_median_days), spec.visit_gap_sigma)
    gap = round(gap_days * DAY_SECONDS)
    return max(spec.min_visit_gap_seconds, min(spec.max_visit_gap_seconds, gap))


def _conversation(
    index: int, turns: int, start: int, spec: TranscriptSpec, rng: random.Random
) -> Conversation:
    writer = ProseWriter(rng)
    visits = max(1, round(turns / spec.turns_per_visit))
    sizes = _split(turns, visits, rng, sigma=0.7, minimum=1)
    made: list[Turn] = []
    now = start
    for visit, size in enumerate(sizes):
        if visit:
            now += visit_gap(spec, rng)
        for position in range(size):
            if position:
                now += rng.randint(spec.min_gap_seconds, spec.max_gap_seconds)
            text, reply = writer.exchange(spec)
            made.append(Turn(index, len(made), now, text, reply, visit_start=position == 0))
    return Conversation(index, tuple(made))


def generate(seed: int, spec: TranscriptSpec | None = None) -> TranscriptSet:
    """The transcript set of ``seed``: the same seed and spec always give the same set."""
    spec = spec or TranscriptSpec()
    rng = random.Random(seed)
    return build_set(
        seed, spec, rng, lambda index, turns, start: _conversation(index, turns, start, spec, rng)
    )


def build_set(
    seed: int,
    spec: TranscriptSpec,
    rng: random.Random,
    conversation: Callable[[int, int, int], Conversation],
) -> TranscriptSet:
    """A set of ``spec.conversations`` conversations, each made by ``conversation(index,
    turns, start)``, sharing one system prompt, all drawn from ``rng``."""
    prompt = system_prompt(spec.system_prompt_tokens, rng)
    minimum = min(MIN_CONVERSATION_TURNS, spec.turns // spec.conversations)
    sizes = _split(spec.turns, spec.conversations, rng, sigma=0.4, minimum=minimum)
    conversations = tuple(
        conversation(index, size, START_EPOCH + rng.randint(0, 3 * DAY_SECONDS))
        for index, size in enumerate(sizes)
    )
    timeline = sorted(
        (turn for c in conversations for turn in c.turns),
        key=lambda turn: (turn.sent_at, turn.conversation, turn.index),
    )
    return TranscriptSet(seed, spec, prompt, conversations, tuple(timeline))


def main(argv: list[str] | None = None) -> None:
    """Print the shape of a generated set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="the small set")
    args = parser.parse_args(argv)
    spec = TranscriptSpec.quick() if args.quick else TranscriptSpec()
    print(generate(args.seed, spec).describe())


if __name__ == "__main__":
    main()
