"""The tool-call part of ``/usage`` and ``hermes usage``: calls per tool, their run time
(total and longest), errors, refused approvals and cancellations.

The chat shows the most called tools of each period (short enough for a phone); the CLI
prints every tool, one row each.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.store.repository_tool_calls import ToolCallStats

TOP_TOOLS = 5
"""Tools listed per period in the chat (the most called); the rest are counted in one line."""
TABLE_COLUMNS = (
    f"{'calls':>6} {'errors':>6} {'refused':>7} {'cancel':>6} {'total s':>9} {'longest s':>9}"
)

NAME_COLUMN_CHARS = 28
"""The tool column's least width; longer names (MCP tools run to 64) widen it for every row."""


def duration(seconds: float) -> str:
    """``35 ms`` below a second, else ``2.50 s``."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _problems(errors: int, refused: int, cancelled: int) -> list[str]:
    """``1 error``, ``2 not approved``, ``1 cancelled``: only the ones that happened."""
    parts = [_plural(errors, "error")] if errors else []
    if refused:
        parts.append(f"{refused} not approved")
    if cancelled:
        parts.append(f"{cancelled} cancelled")
    return parts


def tool_line(stats: ToolCallStats) -> str:
    """``calculator: 2 calls, 2.00 s (longest 1.50 s), 1 error``."""
    parts = [_plural(stats.calls, "call")]
    if stats.run_seconds > 0:
        longest = duration(stats.longest_seconds)
        parts.append(f"{duration(stats.run_seconds)} (longest {longest})")
    parts += _problems(stats.errors, stats.refused, stats.cancelled)
    return f"{stats.tool}: {', '.join(parts)}"


def period_lines(label: str, stats: Sequence[ToolCallStats], top: int = TOP_TOOLS) -> list[str]:
    """One period of the chat report: its totals, then its ``top`` most called tools."""
    if not stats:
        return [f"  {label}: none"]
    calls = sum(s.calls for s in stats)
    seconds = sum(s.run_seconds for s in stats)
    problems = _problems(
        sum(s.errors for s in stats), sum(s.refused for s in stats), sum(s.cancelled for s in stats)
    )
    summary = ", ".join([_plural(calls, "call"), duration(seconds), *problems])
    lines = [f"  {label}: {summary}"]
    lines += [f"    {tool_line(s)}" for s in stats[:top]]
    if len(stats) > top:
        rest = stats[top:]
        rest_calls = _plural(sum(s.calls for s in rest), "call")
        lines.append(f"    +{_plural(len(rest), 'other tool')}: {rest_calls}")
    return lines


def tool_calls_text(
    heading: str, periods: Sequence[tuple[str, Sequence[ToolCallStats]]], top: int = TOP_TOOLS
) -> str:
    """The chat report: ``heading``, then each (label, stats) period."""
    lines = [heading]
    for label, stats in periods:
        lines += period_lines(label, stats, top)
    return "\n".join(lines)


def tool_calls_table(stats: Sequence[ToolCallStats]) -> list[str]:
    """Every row, for the terminal (``user  tool`` when summed per user)."""
    first = "user  tool" if any(s.user is not None for s in stats) else "tool"
    names = [f"{s.user}  {s.tool}" if s.user is not None else s.tool for s in stats]
    width = max([NAME_COLUMN_CHARS, *(len(name) for name in names)])
    lines = [f"{first:<{width}} {TABLE_COLUMNS}"]
    for s, name in zip(stats, names, strict=True):
        lines.append(
            f"{name:<{width}} {s.calls:>6} {s.errors:>6} {s.refused:>7} {s.cancelled:>6} "
            f"{s.run_seconds:>9.3f} {s.longest_seconds:>9.3f}"
        )
    return lines
