"""An inline SVG step chart of remote size and copy lag: no script, no downloads.

The gauges change only at events, so each line is drawn as steps (flat until the next event).
Both series are bytes and share one axis. This module does the arithmetic; ``chart.html``
draws it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tierflow.operator_view.formatting import human_bytes
from tierflow.operator_view.model import HistoryPoint
from tierflow.operator_view.templating import render

WIDTH, HEIGHT = 960, 240
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 14, 40
SERIES = (
    ("remote_log_size_bytes", "Remote size (RemoteLogSizeBytes)", "#2b6cb0"),
    ("remote_copy_lag_bytes", "Copy lag (RemoteCopyLagBytes)", "#dd6b20"),
)
GRID_LINES = 4
LEGEND_STEP = 300  # between the series' legends


@dataclass(frozen=True)
class Line:
    """One series: its step path and where its legend starts."""

    field: str
    label: str
    colour: str
    path: str
    legend_x: int


@dataclass(frozen=True)
class Chart:
    """What ``chart.html`` draws, in the SVG's own units."""

    first: HistoryPoint
    last: HistoryPoint
    points: int
    grid: list[tuple[float, str]]  # (y, the bytes it stands for)
    lines: list[Line]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_x: int = WIDTH - RIGHT
    bottom_y: int = HEIGHT - BOTTOM


def history_chart(points: Sequence[HistoryPoint]) -> str:
    """The chart alone (the page includes ``chart.html`` with ``chart_figure`` itself)."""
    return render("chart.html", chart=chart_figure(points))


def chart_figure(points: Sequence[HistoryPoint]) -> Chart | None:
    """None without points: there is nothing to draw."""
    if not points:
        return None
    first, last = points[0].time_ms, points[-1].time_ms
    start, span = first, max(last - first, 1)
    top_value = max(max(p.remote_log_size_bytes, p.remote_copy_lag_bytes) for p in points)
    top_value = max(top_value, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(time_ms: int) -> float:
        return LEFT + (time_ms - start) / span * plot_w

    def y(value: int) -> float:
        return TOP + plot_h - value / top_value * plot_h

    values = [round(top_value * i / GRID_LINES) for i in range(GRID_LINES + 1)]
    lines = [
        Line(field, label, colour, _steps(points, x, y, field), LEFT + index * LEGEND_STEP)
        for index, (field, label, colour) in enumerate(SERIES)
    ]
    return Chart(
        first=points[0],
        last=points[-1],
        points=len(points),
        grid=[(y(value), human_bytes(value)) for value in values],
        lines=lines,
    )


def _steps(
    points: Sequence[HistoryPoint],
    x: Callable[[int], float],
    y: Callable[[int], float],
    field: str,
) -> str:
    """M x0 y0 H x1 V y1 H x2 V y2 …: flat until the next point, then up or down."""
    values = [getattr(p, field) for p in points]
    # A single point is drawn as a flat line across the chart rather than as nothing.
    first_x = x(points[0].time_ms) if len(points) > 1 else LEFT
    commands = [f"M{first_x:.1f} {y(values[0]):.1f}"]
    for point, value in zip(points[1:], values[1:], strict=True):
        commands.append(f"H{x(point.time_ms):.1f} V{y(value):.1f}")
    if len(points) == 1:
        commands.append(f"H{WIDTH - RIGHT}")
    return " ".join(commands)
