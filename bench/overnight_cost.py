"""Benchmark: what multi-day conversations cost under each context policy, from one run.

A seeded set of synthetic conversations (:mod:`bench.transcripts`: visits days apart, human
pace inside, realistic lengths, scripted replies) is replayed through the real daemon against
the emulators (:mod:`bench.overnight_replay`), once per policy and window, at Sonnet prices:

- ``anchor``: what the anchor system does (compaction at the 50% threshold only, summaries by
  the main model, a fixed 5m TTL, no cold-start or idle compaction);
- ``anchor-85``: the anchor as it really runs below a 64K window, with an 85% threshold;
- ``new``: this project's defaults.

Config keys are used only where the daemon has them (``compression.cold_start`` / ``idle``
appear with the cost-aware policy); before that, ``new`` is the anchor and its ratio ~1.0.

It prints each run's cost breakdown (visit-start writes, other writes, reads, uncached input,
summaries, output), the ratios new/anchor from the same run, lost messages, invalid requests,
prompts over the window, and, in a second pass on the first conversations with a summary model
that takes 10 s, how long the user waits for a reply when a compaction is involved. Exit status
1 when anything of the ``new`` policy was lost, refused or over the window; the anchors' own
failures (on the tool workload a 12,500-token result does not fit beside a turn in a 32K
window) are printed and counted in their tables, not in the exit status.

``--workload tools`` replays two tool-heavy sets instead, each through the workbench MCP
server, each with its own tables: first an agent at work (:mod:`bench.agent_transcripts`, the
shape of recorded coding-agent sessions: one request a visit worked on for 20-50 steps, one call
a step, outputs of median ~900 characters with a long tail to ~30,000), then the large-output
set (:mod:`bench.tool_transcripts`: outputs of 500 to 30,000 tokens, a few to 40 calls a visit,
parallel calls). ``--workload agent`` or ``--workload tools-large`` runs one of them. There the
anchor also keeps a tool result
whole in the context up to ``ANCHOR_TOOL_RESULT_TOKENS`` (the 50,000-character cut peers and
this daemon had before large results were kept aside), and prunes old outputs in its phase 1
as the compressor does; ``new`` keeps results over ``agent.max_tool_result_tokens`` aside.
The tables add the largest prompt sent, the tool calls made, the page reads of shortened
results, and clearings and compactions per visit.

    python -m bench.overnight_cost              # the full set: 10 conversations, ~3,000 turns
    python -m bench.overnight_cost --quick      # a small set, a minute or two
    python -m bench.overnight_cost --workload tools [--quick]    # agent work, then large outputs
    python -m bench.overnight_cost --workload agent [--quick]    # agent work only
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bench.agent_transcripts import AgentTranscriptSpec, generate_agent, shape_line
from bench.gateway_load import percentiles
from bench.overnight_replay import MAIN_MODEL, PolicyRun, ReplayResult, replay
from bench.tool_transcripts import ToolTranscriptSpec, generate_tools
from bench.transcripts import TranscriptSet, TranscriptSpec, generate
from gateway.config.schema import CompressionSettings, PromptCachingSettings
from gateway.runtime import event_loop

DEFAULT_SEED = 7
WINDOWS = (32_000, 200_000)
ANCHOR_RAISED_THRESHOLD_BELOW = 64_000
"""The anchor raises its threshold to 85% below this window."""
SLOW_SUMMARY_SECONDS = 10.0
LATENCY_CONVERSATIONS = 2
DEFAULT_WORKERS = min(3, os.cpu_count() or 1)
"""Cost replays at once: about one per core (each is one busy process)."""
ANCHOR = "anchor"
ANCHOR_85 = "anchor-85"
NEW = "new"
CHAT, TOOLS, AGENT, TOOLS_LARGE = "chat", "tools", "agent", "tools-large"
WORKLOADS = {
    CHAT: (CHAT,),
    TOOLS: (AGENT, TOOLS_LARGE),
    AGENT: (AGENT,),
    TOOLS_LARGE: (TOOLS_LARGE,),
}
"""Each ``--workload`` and the sets it replays, in order."""
ANCHOR_TOOL_RESULT_TOKENS = 12_500
"""The anchor keeps a tool result whole up to about 50,000 characters (4 a token)."""

Overrides = dict[str, Any]


def _supported(settings: type[Any], key: str) -> bool:
    return key in settings.model_fields


def anchor_overrides(window: int, threshold: float = 0.50) -> Overrides:
    """The anchor policy in this daemon's config keys (those it has)."""
    compression: dict[str, Any] = {"threshold": threshold}
    for key in ("cold_start", "idle", "threshold_in_background", "prune_tail"):
        if _supported(CompressionSettings, key):
            compression[key] = "off"
    return {
        "compression": compression,
        "auxiliary": {"compression": {"model": MAIN_MODEL}},
        "prompt_caching": {"cache_ttl": "5m"},
    }


def anchor_85_overrides(window: int) -> Overrides:
    """The anchor with its threshold raised to 85% below a 64K window."""
    return anchor_overrides(window, 0.85 if window < ANCHOR_RAISED_THRESHOLD_BELOW else 0.50)


def new_overrides(window: int) -> Overrides:
    """This project's defaults."""
    return {}


POLICIES: dict[str, Callable[[int], Overrides]] = {
    ANCHOR: anchor_overrides,
    ANCHOR_85: anchor_85_overrides,
    NEW: new_overrides,
}


def policy_keys_in_use() -> str:
    """Which of the cost-aware policy's config keys this daemon has."""
    present = [
        f"compression.{key}"
        for key in ("cold_start", "idle")
        if _supported(CompressionSettings, key)
    ]
    ttl = PromptCachingSettings.model_fields["cache_ttl"].annotation
    if "auto" in str(ttl):
        present.append("prompt_caching.cache_ttl: auto")
    return ", ".join(present) or "none (new = anchor until the cost-aware policy lands)"


@dataclass
class BenchReport:
    """Every replay of one benchmark run."""

    transcripts: TranscriptSet
    costs: list[ReplayResult] = field(default_factory=list)
    latency: list[ReplayResult] = field(default_factory=list)
    wall_seconds: float = 0.0

    def cost_of(self, policy: str, window: int) -> ReplayResult | None:
        """The cost replay of ``policy`` at ``window``, if it ran."""
        return next(
            (r for r in self.costs if (r.run.policy, r.run.window) == (policy, window)), None
        )

    @property
    def problems(self) -> list[str]:
        """Everything lost, refused or over the window in the replays of this daemon's own
        policy (``new``): what fails the benchmark."""
        return self._problems(anchors=False)

    @property
    def anchor_failures(self) -> list[str]:
        """The same for the anchors' replays: their policies' own failures (a 12,500-token
        result beside a turn in a 32K window), reported, not counted against ``new``."""
        return self._problems(anchors=True)

    def _problems(self, *, anchors: bool) -> list[str]:
        found = []
        for result in [*self.costs, *self.latency]:
            if (result.run.policy != NEW) != anchors:
                continue
            label = f"{result.run.policy} {result.run.window // 1000}K"
            found += [f"{label}: {problem}" for problem in result.problems]
            if result.invalid_requests:
                found.append(f"{label}: {result.invalid_requests} invalid requests")
            if result.summaries_without_previous:
                found.append(
                    f"{label}: {result.summaries_without_previous} summary requests "
                    "without the previous summary"
                )
        return found


@dataclass(frozen=True)
class ReplayJob:
    """One replay to run: the policy run, the summary model's delay, the conversations."""

    run: PolicyRun
    summary_delay: float = 0.0
    conversations: int | None = None


def replay_job(transcripts: TranscriptSet, job: ReplayJob) -> ReplayResult:
    """One replay on an event loop of its own (what a worker process runs)."""
    return event_loop.run(
        replay(
            transcripts, job.run, summary_delay=job.summary_delay, conversations=job.conversations
        )
    )


async def run_jobs(
    transcripts: TranscriptSet, jobs: list[ReplayJob], workers: int
) -> list[ReplayResult]:
    """The jobs' results in order: here one after the other, or ``workers`` processes at once
    (each replay has its own daemon, emulators and store, so they do not interfere)."""
    if workers <= 1:
        return [
            await replay(
                transcripts,
                job.run,
                summary_delay=job.summary_delay,
                conversations=job.conversations,
            )
            for job in jobs
        ]
    loop = asyncio.get_running_loop()
    # spawn: a child forked from a running event loop would inherit it.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context) as pool:
        running = [loop.run_in_executor(pool, replay_job, transcripts, job) for job in jobs]
        return list(await asyncio.gather(*running))


def policy_run(policy: str, window: int, tools: bool) -> PolicyRun:
    """``policy`` at ``window``; on a tool-heavy set the anchors keep results up to their cut."""
    overrides = POLICIES[policy](window)
    if tools and policy != NEW:
        overrides = {**overrides, "agent": {"max_tool_result_tokens": ANCHOR_TOOL_RESULT_TOKENS}}
    return PolicyRun(policy, window, overrides)


def cost_jobs(
    windows: tuple[int, ...], policies: tuple[str, ...], tools: bool = False
) -> list[ReplayJob]:
    """One cost replay per policy and window (anchor-85 only where it differs from anchor)."""
    return [
        ReplayJob(policy_run(policy, window, tools))
        for window in windows
        for policy in policies
        if not (policy == ANCHOR_85 and window >= ANCHOR_RAISED_THRESHOLD_BELOW)
    ]


def latency_jobs(
    windows: tuple[int, ...],
    policies: tuple[str, ...],
    conversations: int,
    delay: float,
    tools: bool = False,
) -> list[ReplayJob]:
    """The slow-summary replays of the anchor and the new policy on the first conversations."""
    return [
        ReplayJob(policy_run(policy, window, tools), delay, conversations)
        for window in windows
        for policy in (ANCHOR, NEW)
        if policy in policies and conversations
    ]


async def run_bench(
    transcripts: TranscriptSet,
    *,
    windows: tuple[int, ...] = WINDOWS,
    policies: tuple[str, ...] = (ANCHOR, ANCHOR_85, NEW),
    latency_conversations: int = LATENCY_CONVERSATIONS,
    summary_delay: float = SLOW_SUMMARY_SECONDS,
    workers: int = 1,
) -> BenchReport:
    """The cost replays, then the latency replays (none when ``latency_conversations`` is 0).

    With ``workers`` > 1 the cost replays run that many at a time in worker processes, and the
    latency replays (mostly waiting for the slow summary model) all at once.
    """
    report = BenchReport(transcripts)
    started = time.perf_counter()
    tools = transcripts.tool_calls > 0
    report.costs = await run_jobs(transcripts, cost_jobs(windows, policies, tools), workers)
    slow = latency_jobs(windows, policies, latency_conversations, summary_delay, tools)
    report.latency = await run_jobs(transcripts, slow, len(slow) if workers > 1 else 1)
    report.wall_seconds = time.perf_counter() - started
    return report


def _money(value: float) -> str:
    return f"${value:8.2f}"


def _ratio(result: ReplayResult, base: ReplayResult | None) -> str:
    if base is None or not base.costs.total:
        return "     -"
    return f"{result.costs.total / base.costs.total:5.2f}x"


def cost_lines(report: BenchReport, window: int) -> list[str]:
    """The cost table of one window."""
    results = [r for r in report.costs if r.run.window == window]
    if not results:
        return []
    names = [name for name, _ in results[0].costs.items()]
    header = "  policy     " + " ".join(f"{n.replace('_', '-')[:18]:>18}" for n in names)
    lines = [f"window {window // 1000}K", header + "       total  vs anchor"]
    anchor = report.cost_of(ANCHOR, window)
    for result in results:
        total = result.costs.total or 1.0
        cells = " ".join(
            f"{_money(value)} {100 * value / total:3.0f}%".rjust(18)
            for _, value in result.costs.items()
        )
        lines.append(
            f"  {result.run.policy:<10} {cells}  {_money(result.costs.total)}  "
            f"{_ratio(result, anchor)}"
        )
    for result in results:
        compactions = ", ".join(f"{k} {v}" for k, v in sorted(result.compactions.items()))
        models = ", ".join(sorted(result.summary_models)) or "-"
        lines.append(
            f"  {result.run.policy:<10} lost {result.lost}, invalid requests "
            f"{result.invalid_requests}, over the window {result.over_window}, largest prompt "
            f"{result.largest_prompt:,}, {_tool_part(result)}summary "
            f"requests {result.summary_requests} by {models} (without the previous summary "
            f"{result.summaries_without_previous}), compactions: {compactions or 'none'}; "
            f"{result.requests} requests, {result.wall_seconds:.0f} s"
        )
        if result.run.policy == NEW and result.tool_calls:
            lines.append(f"  {'':<10} {result.clearings.describe()}")
    return lines


def _tool_part(result: ReplayResult) -> str:
    if not result.tool_calls:
        return ""
    return (
        f"tool calls {result.tool_calls} (page reads {result.page_reads}), per visit "
        f"{per_visit_part(result)}, "
    )


def per_visit_part(result: ReplayResult) -> str:
    """Clearings (used tool outputs cleared, no summary) and compactions per visit."""
    visits = max(1, result.visits)
    clearings = sum(n for key, n in result.compactions.items() if key.startswith("prune/"))
    compactions = sum(result.compactions.values()) - clearings
    return f"clearings {clearings / visits:.2f} and compactions {compactions / visits:.2f}"


def latency_lines(report: BenchReport) -> list[str]:
    """The compaction-wait lines of the latency pass."""
    if not report.latency:
        return []
    first = report.latency[0]
    lines = [
        f"wait for a reply with a {SLOW_SUMMARY_SECONDS:.0f} s summary model "
        f"({first.turns} turns of the first conversations, {first.visits} visits)"
    ]
    for result in report.latency:
        p50, p95 = percentiles(result.compaction_waits)
        _, all_p95 = percentiles(result.waits)
        worst = max(result.compaction_waits, default=0.0)
        lines.append(
            f"  {result.run.policy:<10} {result.run.window // 1000:>3}K  turns with a compaction "
            f"{len(result.compaction_waits):>3}: p50 {p50:5.2f} s  p95 {p95:5.2f} s  max "
            f"{worst:5.2f} s;  every turn p95 {all_p95:5.2f} s; lost {result.lost}, invalid "
            f"{result.invalid_requests}"
        )
    return lines


def ratio_line(report: BenchReport) -> str:
    """new/anchor (and new/anchor-85) per window, from the same run."""
    parts = []
    for window in sorted({r.run.window for r in report.costs}):
        new = report.cost_of(NEW, window)
        if new is None:
            continue
        for base_name in (ANCHOR, ANCHOR_85):
            base = report.cost_of(base_name, window)
            if base is not None:
                parts.append(f"new/{base_name} {window // 1000}K {_ratio(new, base).strip()}")
    return "ratios: " + ", ".join(parts)


def render(report: BenchReport) -> str:
    """Everything the benchmark prints."""
    lines = [
        f"overnight cost: {report.transcripts.describe()}",
        f"  {MAIN_MODEL} prices, emulator cache accounting (5m/1h TTL, write 1.25x/2x, read "
        f"0.1x); policy config keys present: {policy_keys_in_use()}",
    ]
    for window in sorted({r.run.window for r in report.costs}):
        lines += cost_lines(report, window)
    lines.append(ratio_line(report))
    lines += latency_lines(report)
    problems = report.problems
    if failures := report.anchor_failures:
        lines.append(f"anchor runs' own failures (not counted): {len(failures)}")
        lines += [f"  {failure}" for failure in failures[:5]]
    lines.append(
        f"{'OK' if not problems else f'FAILED ({len(problems)} problems)'} "
        f"in {report.wall_seconds:.0f} s"
    )
    lines += [f"  problem: {problem}" for problem in problems[:20]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--quick", action="store_true", help="a small set (3 conversations)")
    parser.add_argument(
        "--workload",
        choices=list(WORKLOADS),
        default=CHAT,
        help="chat sessions; tools: agent work, then large tool outputs, through an MCP server",
    )
    parser.add_argument(
        "--windows", type=int, nargs="+", default=list(WINDOWS), help="context windows"
    )
    parser.add_argument("--policies", nargs="+", choices=list(POLICIES), default=list(POLICIES))
    parser.add_argument(
        "--latency-conversations",
        type=int,
        default=None,
        help=f"conversations in the {SLOW_SUMMARY_SECONDS:.0f} s summary pass (0: skip it)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="replays at once, in worker processes (1: all in this process)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("no_proxy", "127.0.0.1,localhost")
    logging.basicConfig(level=logging.WARNING)
    latency = args.latency_conversations
    if latency is None:
        latency = 1 if args.quick else LATENCY_CONVERSATIONS
    failed = False
    for workload in WORKLOADS[args.workload]:
        transcripts = make_set(workload, args.seed, quick=args.quick)
        report = event_loop.run(
            run_bench(
                transcripts,
                windows=tuple(args.windows),
                policies=tuple(args.policies),
                latency_conversations=latency,
                workers=args.workers,
            )
        )
        print(f"== workload {workload}")
        if workload == AGENT:
            print(f"  shape: {shape_line(transcripts)}")
        print(render(report), flush=True)
        failed = failed or bool(report.problems)
    return 1 if failed else 0


def make_set(workload: str, seed: int, *, quick: bool) -> TranscriptSet:
    """The transcript set one workload replays."""
    if workload == AGENT:
        return generate_agent(seed, AgentTranscriptSpec.quick() if quick else None)
    if workload == TOOLS_LARGE:
        return generate_tools(seed, ToolTranscriptSpec.quick() if quick else None)
    return generate(seed, TranscriptSpec.quick() if quick else None)


if __name__ == "__main__":
    sys.exit(main())
