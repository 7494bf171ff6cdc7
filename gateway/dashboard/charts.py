"""Charts drawn on the server as inline SVG: nothing to fetch, no script to run.

Pure functions from numbers to SVG text; the page embeds the result as is. Every bar and
point carries a ``<title>`` with its exact value, which a browser shows on hover.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 760
HEIGHT = 220
MARGIN_LEFT = 56
MARGIN_BOTTOM = 28
MARGIN_TOP = 10
PALETTE = ("#4e79a7", "#a0cbe8", "#59a14f", "#f28e2b", "#b07aa1", "#e15759", "#76b7b2")
"""Colour-blind-safe enough for six series, in the order the series are given."""
LABEL_GAP = 3
"""Categories between two axis labels at the least, so that they do not overlap."""


@dataclass(frozen=True, slots=True)
class Series:
    """One named series of a chart, a value per category."""

    label: str
    values: Sequence[float]


def _plot_height() -> float:
    return HEIGHT - MARGIN_BOTTOM - MARGIN_TOP


def _axis(top: float, fmt: Callable[[float], str]) -> list[str]:
    """The y axis: a baseline, the top value and the middle one."""
    base = HEIGHT - MARGIN_BOTTOM
    parts = [f'<line x1="{MARGIN_LEFT}" y1="{base}" x2="{WIDTH}" y2="{base}" stroke="#888"/>']
    for share in (0.5, 1.0):
        y = base - share * _plot_height()
        parts.append(
            f'<line x1="{MARGIN_LEFT}" y1="{y:.1f}" x2="{WIDTH}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{MARGIN_LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">'
            f"{escape(fmt(top * share))}</text>"
        )
    return parts


def _day_labels(categories: Sequence[str], step: float) -> list[str]:
    """Every seventh category's label under the bars (the days' ``MM-DD``), and the last one
    unless it would touch the one before."""
    parts = []
    for index, category in enumerate(categories):
        last = index == len(categories) - 1
        if index % 7 == 0 or (last and index % 7 >= LABEL_GAP):
            x = MARGIN_LEFT + (index + 0.5) * step
            parts.append(
                f'<text x="{x:.1f}" y="{HEIGHT - 10}" text-anchor="middle" font-size="10">'
                f"{escape(category[-5:])}</text>"
            )
    return parts


def _svg(title: str, parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        + "".join(parts)
        + "</svg>"
    )


def stacked_bars(
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    fmt: Callable[[float], str] = lambda v: f"${v:.4f}",
) -> str:
    """A stacked bar per category (a day), one segment per series, bottom first."""
    totals = [sum(s.values[i] for s in series) for i in range(len(categories))]
    top = max(totals, default=0.0) or 1.0
    step = (WIDTH - MARGIN_LEFT) / max(len(categories), 1)
    parts = _axis(top, fmt)
    for index, category in enumerate(categories):
        y = float(HEIGHT - MARGIN_BOTTOM)
        for colour, one in zip(PALETTE, series, strict=False):
            value = one.values[index]
            if value <= 0:
                continue
            height = value / top * _plot_height()
            y -= height
            parts.append(
                f'<rect x="{MARGIN_LEFT + index * step + 1:.1f}" y="{y:.1f}" '
                f'width="{max(step - 2, 1):.1f}" height="{height:.1f}" fill="{colour}">'
                f"<title>{escape(category)} {escape(one.label)}: {escape(fmt(value))}</title>"
                "</rect>"
            )
    parts += _day_labels(categories, step)
    return _svg(title, parts)


def line(
    title: str,
    categories: Sequence[str],
    values: Sequence[float | None],
    fmt: Callable[[float], str] = lambda v: f"{v:.0%}",
    top: float = 1.0,
) -> str:
    """A line through the categories' values (None: no point that day), on a 0..top axis."""
    step = (WIDTH - MARGIN_LEFT) / max(len(categories), 1)
    parts = _axis(top, fmt)
    points = []
    base = HEIGHT - MARGIN_BOTTOM
    for index, (category, value) in enumerate(zip(categories, values, strict=True)):
        if value is None:
            continue
        x = MARGIN_LEFT + (index + 0.5) * step
        y = base - value / top * _plot_height()
        points.append(f"{x:.1f},{y:.1f}")
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{PALETTE[0]}">'
            f"<title>{escape(category)}: {escape(fmt(value))}</title></circle>"
        )
    if len(points) > 1:
        parts.insert(
            0,
            f'<polyline points="{" ".join(points)}" fill="none" stroke="{PALETTE[0]}" '
            'stroke-width="2"/>',
        )
    parts += _day_labels(categories, step)
    return _svg(title, parts)


def legend(labels: Sequence[str]) -> Mapping[str, str]:
    """Each series label with its colour, for the legend under a stacked chart."""
    return dict(zip(labels, PALETTE, strict=False))
