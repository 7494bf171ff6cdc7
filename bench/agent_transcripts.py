"""Synthetic multi-day sessions of an agent at work, shaped like recorded coding-agent sessions.

The other tool set (:mod:`bench.tool_transcripts`) has large outputs, few steps and parallel
calls. Recorded sessions of a coding agent, chained as multi-day chats, look different, and
this module makes sets of *that* shape (shape only: no recorded data is used), deterministically
from a seed:

- each visit is one request the agent works on for ``min_steps``-``max_steps`` steps (20 to 50),
  **one tool call per step**, then a final answer; visits are a day or more apart, and inside a
  visit the model calls come about 20 s apart (the cache stays warm: the replay keeps the clock
  at the message's time for the whole turn);
- before each call the model writes what it does next (a short note, heavy-tailed) and the
  call's input: a path or a command is a few tokens, an edit's new text a few hundred (about
  one step in five edits a file, as coding agents do between reading and running tests):
  ~210 output tokens a step on average, as recorded sessions bill. The notes stay in the
  context; a used edit's text is what a clearing of tool inputs can shorten;
- tool outputs in characters: median ~900, 90th percentile ~5,000, 95th ~19,000, largest
  ~30,000; many small outputs (a view of a few lines, a command's short output, an edit's
  confirmation) and a few large ones (a whole file, a long log). A mixture draws them: a
  log-normal body (median ``body_median_chars``, ``body_sigma``) and a share ``tail_share`` of
  log-uniform outputs between ``tail_min_chars`` and ``max_output_chars``. :meth:`AgentSet`
  prints the quantiles a set actually has, beside the targets.

Tokens are the emulator's (4 characters a token).

    python -m bench.agent_transcripts --seed 7     # prints the set's shape and quantiles
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from bench.tool_transcripts import PROJECT_DIRS, PROJECT_WORDS
from bench.transcripts import (
    DAY_SECONDS,
    Conversation,
    ProseWriter,
    ToolCall,
    TranscriptSet,
    TranscriptSpec,
    Turn,
    build_set,
    visit_gap,
)
from sandbox.anthropic_prompt import CHARS_PER_TOKEN

TOOL_WEIGHTS = {"read_file": 0.36, "edit_file": 0.22, "run_command": 0.34, "fetch_page": 0.08}
"""Views of files, edits, commands (tests, greps), now and then a web page."""
TARGET_QUANTILES_CHARS = {"median": 900, "p90": 5_000, "p95": 19_000, "max": 30_000}
"""The output sizes of the recorded sessions this set is shaped after (characters)."""


@dataclass(frozen=True)
class AgentTranscriptSpec(TranscriptSpec):
    """The shape of an agent-work set: one request a visit, 20-50 single-call steps."""

    conversations: int = 6
    turns: int = 72
    """Requests over all conversations (one a visit: 12 visits a conversation)."""
    turns_per_visit: float = 1.0
    min_steps: int = 20
    max_steps: int = 50
    body_median_chars: float = 850.0
    body_sigma: float = 0.98
    tail_share: float = 0.075
    tail_min_chars: int = 15_000
    max_output_chars: int = 30_000
    min_output_chars: int = 20
    note_tokens_median: float = 60.0
    note_tokens_sigma: float = 1.0
    max_note_tokens: int = 4_000
    """What the model writes at each step before its call: a note of what it does next,
    log-normal, mean ~100 tokens."""
    edit_tokens_median: float = 240.0
    edit_tokens_sigma: float = 1.0
    max_edit_tokens: int = 4_000
    """An edit's new text (``edit_file``): log-normal, mean ~400 tokens (a changed function;
    now and then a new file). With the notes and the calls' names and paths a step's model
    output is ~210 tokens: recorded agent sessions bill about 180-320 output tokens per request
    (their output cost over their requests)."""
    min_visit_gap_seconds: int = DAY_SECONDS
    user_tokens_median: float = 60.0
    user_tokens_sigma: float = 0.8
    reply_tokens_median: float = 220.0
    reply_tokens_sigma: float = 0.5

    @classmethod
    def quick(cls) -> AgentTranscriptSpec:
        """A small set for a quick look: three conversations of eight visits."""
        return cls(conversations=3, turns=24)


class _StepMaker:
    """Single-call steps with unique arguments and output sizes of the recorded shape."""

    def __init__(self, rng: random.Random, spec: AgentTranscriptSpec) -> None:
        self._rng = rng
        self._spec = spec
        self._numbers = itertools.count(1)

    def output_chars(self, tool: str) -> int:
        """One output's size in characters, from the body-and-tail mixture (an edit answers
        with the edited part: never from the tail, which the other tools share instead)."""
        rng, spec = self._rng, self._spec
        tail_share = (
            0.0 if tool == "edit_file" else spec.tail_share / (1 - TOOL_WEIGHTS["edit_file"])
        )
        if rng.random() < tail_share:
            low, high = math.log(spec.tail_min_chars), math.log(spec.max_output_chars)
            drawn = math.exp(rng.uniform(low, high))
        else:
            drawn = rng.lognormvariate(math.log(spec.body_median_chars), spec.body_sigma)
        return max(spec.min_output_chars, min(spec.max_output_chars, round(drawn)))

    def call(self) -> ToolCall:
        """One step's call: a tool, a unique argument, its output size and the note before."""
        rng, spec = self._rng, self._spec
        tool = rng.choices(list(TOOL_WEIGHTS), weights=list(TOOL_WEIGHTS.values()))[0]
        tokens = max(1, round(self.output_chars(tool) / CHARS_PER_TOKEN))
        number, word = next(self._numbers), rng.choice(PROJECT_WORDS)
        edit = 0
        if tool in ("read_file", "edit_file"):
            argument = f"/srv/project/{rng.choice(PROJECT_DIRS)}/{word}_{number}.py"
            if tool == "edit_file":
                drawn = rng.lognormvariate(
                    math.log(spec.edit_tokens_median), spec.edit_tokens_sigma
                )
                edit = max(8, min(spec.max_edit_tokens, round(drawn)))
        elif tool == "run_command":
            argument = f"grep -rn {word}_{number} src tests"
        else:
            argument = f"https://docs.example.org/{word}/page-{number}"
        drawn_note = rng.lognormvariate(math.log(spec.note_tokens_median), spec.note_tokens_sigma)
        note = max(8, min(spec.max_note_tokens, round(drawn_note)))
        return ToolCall(tool, argument, tokens, note_tokens=note, input_tokens=edit)

    def steps(self) -> tuple[tuple[ToolCall, ...], ...]:
        """A visit's work: one call a step."""
        count = self._rng.randint(self._spec.min_steps, self._spec.max_steps)
        return tuple((self.call(),) for _ in range(count))


def _conversation(
    index: int,
    turns: int,
    start: int,
    spec: AgentTranscriptSpec,
    rng: random.Random,
    maker: _StepMaker,
) -> Conversation:
    writer = ProseWriter(rng)
    made: list[Turn] = []
    now = start
    for visit in range(turns):
        if visit:
            now += visit_gap(spec, rng)
        text, reply = writer.exchange(spec)
        made.append(Turn(index, len(made), now, text, reply, True, maker.steps()))
    return Conversation(index, tuple(made))


def generate_agent(seed: int, spec: AgentTranscriptSpec | None = None) -> TranscriptSet:
    """The agent-work set of ``seed``: the same seed and spec always give the same set."""
    spec = spec or AgentTranscriptSpec()
    rng = random.Random(seed)
    maker = _StepMaker(rng, spec)
    return build_set(
        seed,
        spec,
        rng,
        lambda index, turns, start: _conversation(index, turns, start, spec, rng, maker),
    )


def output_quantiles_chars(transcripts: TranscriptSet) -> dict[str, int]:
    """The set's tool-output sizes in characters: median, 90th and 95th percentile, largest."""
    sizes = sorted(
        call.output_tokens * CHARS_PER_TOKEN
        for turn in transcripts.timeline
        for step in turn.steps
        for call in step
    )
    return {
        "median": _quantile(sizes, 0.5),
        "p90": _quantile(sizes, 0.9),
        "p95": _quantile(sizes, 0.95),
        "max": sizes[-1] if sizes else 0,
    }


def _quantile(sorted_values: Sequence[int], share: float) -> int:
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(share * len(sorted_values)))]


def shape_line(transcripts: TranscriptSet) -> str:
    """The set's steps per visit and output quantiles, beside the recorded sessions' targets."""
    steps = [len(turn.steps) for turn in transcripts.timeline if turn.steps]
    found = output_quantiles_chars(transcripts)
    sizes = ", ".join(
        f"{name} {found[name]:,} (target ~{target:,})"
        for name, target in TARGET_QUANTILES_CHARS.items()
    )
    return (
        f"steps per visit {min(steps, default=0)}-{max(steps, default=0)} "
        f"(mean {sum(steps) / max(1, len(steps)):.1f}), one call a step; output chars: {sizes}"
    )


def main(argv: list[str] | None = None) -> None:
    """Print the shape of a generated set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="the small set")
    args = parser.parse_args(argv)
    spec = AgentTranscriptSpec.quick() if args.quick else AgentTranscriptSpec()
    made = generate_agent(args.seed, spec)
    print(made.describe())
    print(shape_line(made))


if __name__ == "__main__":
    main()
