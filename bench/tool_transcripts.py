"""Synthetic multi-day sessions of an assistant that works with tools, from a seeded generator.

The tool-heavy sibling of :mod:`bench.transcripts`: the same people coming back days apart at a
human pace, but each visit is a piece of work on a project: the user asks, the model reads
files, runs commands and fetches pages through the workbench MCP server
(:mod:`sandbox.mcp_workbench`) before it answers. The shapes that decide what such sessions
cost:

- a few to 40 tool calls a visit (log-normal, median ``calls_per_visit_median``), spread over
  the visit's messages (some messages need none: "thanks", a follow-up question);
- one to three calls made together in one model response (parallel tool use);
- outputs of 500 to 30,000 tokens, log-normal per tool: files a couple of thousand tokens,
  command output usually shorter but with a long tail (logs, test runs), pages longer;
- every call's argument is unique, so the server's world file maps each to its output size.

    python -m bench.tool_transcripts --seed 7     # prints the set's shape
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
from dataclasses import dataclass

from bench.transcripts import (
    Conversation,
    ProseWriter,
    ToolCall,
    TranscriptSet,
    TranscriptSpec,
    Turn,
    _split,
    build_set,
    visit_gap,
)

TOOL_WEIGHTS = {"read_file": 0.45, "run_command": 0.35, "fetch_page": 0.20}
OUTPUT_MEDIAN_TOKENS = {"read_file": 2_000, "run_command": 1_200, "fetch_page": 4_000}
STEP_SIZES = (1, 2, 3)
STEP_WEIGHTS = (0.6, 0.25, 0.15)
"""How many calls one model response makes, and how often."""
MAX_STEPS_PER_TURN = 12
"""A turn's calls fit this many model responses (more are made together), so a turn with page
reads stays well inside the daemon's default ``agent.max_iterations`` (20)."""
PROJECT_DIRS = ("src", "src/store", "src/agent", "tests", "docs", "scripts", "config")
PROJECT_WORDS = (
    "cache session window token prefix budget summary context store queue worker record "
    "thread channel model detail signal limit index config server client handler retry "
    "timeout parse render build deploy update migrate backup restore report metric trace"
).split()


@dataclass(frozen=True)
class ToolTranscriptSpec(TranscriptSpec):
    """The shape of a tool-heavy set: fewer, longer visits of work."""

    conversations: int = 6
    turns: int = 300
    turns_per_visit: float = 3.0
    calls_per_visit_median: float = 10.0
    calls_per_visit_sigma: float = 0.8
    min_calls_per_visit: int = 2
    max_calls_per_visit: int = 40
    output_sigma: float = 1.0
    min_output_tokens: int = 500
    max_output_tokens: int = 30_000
    seconds_per_call: int = 4
    """Added to the pause before the next message: the user reads what the tools found."""
    reply_tokens_median: float = 150.0

    @classmethod
    def quick(cls) -> ToolTranscriptSpec:
        """A small set for a quick look: three conversations of about twenty visits."""
        return cls(conversations=3, turns=60)


class _CallMaker:
    """Tool calls with unique arguments and log-normal output sizes."""

    def __init__(self, rng: random.Random, spec: ToolTranscriptSpec) -> None:
        self._rng = rng
        self._spec = spec
        self._numbers = itertools.count(1)

    def call(self) -> ToolCall:
        rng, spec = self._rng, self._spec
        tool = rng.choices(list(TOOL_WEIGHTS), weights=list(TOOL_WEIGHTS.values()))[0]
        drawn = rng.lognormvariate(math.log(OUTPUT_MEDIAN_TOKENS[tool]), spec.output_sigma)
        tokens = max(spec.min_output_tokens, min(spec.max_output_tokens, round(drawn)))
        number, word = next(self._numbers), rng.choice(PROJECT_WORDS)
        if tool == "read_file":
            argument = f"/srv/project/{rng.choice(PROJECT_DIRS)}/{word}_{number}.py"
        elif tool == "run_command":
            argument = f"pytest -x tests/test_{word}.py -k case_{number}"
        else:
            argument = f"https://docs.example.org/{word}/page-{number}"
        return ToolCall(tool, argument, tokens)

    def steps(self, calls: int) -> tuple[tuple[ToolCall, ...], ...]:
        made: list[tuple[ToolCall, ...]] = []
        while calls > 0:
            size = min(calls, self._rng.choices(STEP_SIZES, weights=STEP_WEIGHTS)[0])
            made.append(tuple(self.call() for _ in range(size)))
            calls -= size
        if len(made) <= MAX_STEPS_PER_TURN:
            return tuple(made)
        flat = [call for step in made for call in step]
        per_step = math.ceil(len(flat) / MAX_STEPS_PER_TURN)
        return tuple(tuple(flat[i : i + per_step]) for i in range(0, len(flat), per_step))

    def calls_in_visit(self) -> int:
        spec = self._spec
        drawn = self._rng.lognormvariate(
            math.log(spec.calls_per_visit_median), spec.calls_per_visit_sigma
        )
        return max(spec.min_calls_per_visit, min(spec.max_calls_per_visit, round(drawn)))


def _conversation(
    index: int,
    turns: int,
    start: int,
    spec: ToolTranscriptSpec,
    rng: random.Random,
    maker: _CallMaker,
) -> Conversation:
    writer = ProseWriter(rng)
    visits = max(1, round(turns / spec.turns_per_visit))
    sizes = _split(turns, visits, rng, sigma=0.5, minimum=1)
    made: list[Turn] = []
    now = start
    for visit, size in enumerate(sizes):
        if visit:
            now += visit_gap(spec, rng)
        per_turn = _split(maker.calls_in_visit(), size, rng, sigma=0.8, minimum=0)
        for position in range(size):
            if position:
                now += rng.randint(spec.min_gap_seconds, spec.max_gap_seconds)
                now += spec.seconds_per_call * made[-1].tool_calls
            text, reply = writer.exchange(spec)
            steps = maker.steps(per_turn[position])
            made.append(Turn(index, len(made), now, text, reply, position == 0, steps))
    return Conversation(index, tuple(made))


def generate_tools(seed: int, spec: ToolTranscriptSpec | None = None) -> TranscriptSet:
    """The tool-heavy set of ``seed``: the same seed and spec always give the same set."""
    spec = spec or ToolTranscriptSpec()
    rng = random.Random(seed)
    maker = _CallMaker(rng, spec)
    return build_set(
        seed,
        spec,
        rng,
        lambda index, turns, start: _conversation(index, turns, start, spec, rng, maker),
    )


def world(transcripts: TranscriptSet) -> dict[str, dict[str, int]]:
    """The workbench server's world file: every argument the set calls with, and its size."""
    made: dict[str, dict[str, int]] = {tool: {} for tool in TOOL_WEIGHTS}
    for turn in transcripts.timeline:
        for step in turn.steps:
            for call in step:
                made.setdefault(call.tool, {})[call.argument] = call.output_tokens
    return made


def main(argv: list[str] | None = None) -> None:
    """Print the shape of a generated set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="the small set")
    args = parser.parse_args(argv)
    spec = ToolTranscriptSpec.quick() if args.quick else ToolTranscriptSpec()
    print(generate_tools(args.seed, spec).describe())


if __name__ == "__main__":
    main()
