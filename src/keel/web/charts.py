"""Charts as server-rendered SVG: no script, no library, readable without colour.

`size_chart` draws one value per turn over time (a role's context size per turn): a line
through the turns in time order, a dot per turn linking to its inspector (a hollow dot for
a turn that stubbed a context), and labelled axes. Every value is escaped; the markup is
returned as `Markup` for the templates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

WIDTH = 760
HEIGHT = 220
LEFT = 56  # room for the value labels
BOTTOM = 28  # room for the time labels
TOP = 12
RIGHT = 12
TICKS = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """One turn on the chart."""

    at: datetime
    value: int
    href: str
    label: str
    stubbed: bool = False


def _nice(top: int) -> int:
    """A round upper bound at or above `top` (1, 2 or 5 times a power of ten)."""
    bound = 1
    while True:
        for step in (1, 2, 5):
            if bound * step >= top:
                return bound * step
        bound *= 10


def size_chart(points: Sequence[Point], *, title: str, unit: str) -> Markup:
    """An SVG line chart of `points` (oldest first or not: they are sorted by time)."""
    if not points:
        return Markup('<p class="empty">No turns in this window.</p>')
    ordered = sorted(points, key=lambda p: p.at)
    start, end = ordered[0].at.timestamp(), ordered[-1].at.timestamp()
    span = max(end - start, 1.0)
    top = _nice(max(max(p.value for p in ordered), 1))
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM

    def x(point: Point) -> float:
        if len(ordered) == 1:
            return LEFT + plot_w / 2
        return LEFT + (point.at.timestamp() - start) / span * plot_w

    def y(value: int) -> float:
        return TOP + plot_h - value / top * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="chart-title">',
        f'<title id="chart-title">{escape(title)}</title>',
    ]
    for tick in range(TICKS + 1):
        value = top * tick // TICKS
        level = y(value)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{level:.1f}" '
            f'y2="{level:.1f}"/>'
            f'<text class="axis" x="{LEFT - 6}" y="{level + 4:.1f}" text-anchor="end">'
            f"{value:,}</text>"
        )
    for point, anchor in ((ordered[0], "start"), (ordered[-1], "end")):
        parts.append(
            f'<text class="axis" x="{x(point):.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}">'
            f"{point.at:%m-%d %H:%M}</text>"
        )
    parts.append(
        f'<text class="axis" x="{LEFT}" y="{TOP - 2}" text-anchor="start">{escape(unit)}</text>'
    )
    path = " ".join(f"{x(p):.1f},{y(p.value):.1f}" for p in ordered)
    parts.append(f'<polyline class="line" points="{path}"/>')
    for point in ordered:
        style = "dot stubbed" if point.stubbed else "dot"
        parts.append(
            f'<a href="{escape(point.href)}" aria-label="{escape(point.label)}">'
            f'<circle class="{style}" cx="{x(point):.1f}" cy="{y(point.value):.1f}" r="4">'
            f"<title>{escape(point.label)}</title></circle></a>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
