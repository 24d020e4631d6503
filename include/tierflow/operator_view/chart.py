"""An inline SVG step chart of remote size and copy lag: no script, no downloads.

The gauges change only at events, so each line is drawn as steps (flat until the next event).
Both series are bytes and share one axis, whose ticks are round values (``axes``); the time
axis is ticked at round UTC times. Hovering a step shows its exact value and time through an
SVG ``<title>``: one transparent target per step, at most ``MAX_TARGETS`` a series, so the
history's 500 points cost the page a bounded number of elements. This module does the
arithmetic; ``chart.html`` draws it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tierflow.operator_view.axes import Tick, byte_ticks, time_ticks
from tierflow.operator_view.formatting import human_bytes
from tierflow.operator_view.model import HistoryPoint
from tierflow.operator_view.templating import render
from tierflow.units import iso_utc

WIDTH, HEIGHT = 960, 240
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 14, 40
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
SERIES = (
    ("remote_log_size_bytes", "Remote size (RemoteLogSizeBytes)", "#2b6cb0"),
    ("remote_copy_lag_bytes", "Copy lag (RemoteCopyLagBytes)", "#dd6b20"),
)
LEGEND_STEP = 300  # between the series' legends
MAX_TARGETS = 150  # hover targets a series: about one per 6 px of the plot's width
TARGET_HALF_H = 5  # a target reaches this far above and below its step
TARGET_MIN_W = 4  # the last step (now) has no width of its own
TIME_LABEL_HALF_W = 42  # half an "11-27 14:00:30" label, in SVG units


@dataclass(frozen=True)
class Line:
    """One series: its step path and where its legend starts."""

    field: str
    label: str
    colour: str
    path: str
    legend_x: int


@dataclass(frozen=True)
class Target:
    """A transparent rectangle over one step; ``title`` is what hovering it shows."""

    field: str
    x: float
    y: float
    width: float
    value: int  # bytes, exact
    time_ms: int  # when the step began
    title: str


@dataclass(frozen=True)
class Chart:
    """What ``chart.html`` draws, in the SVG's own units."""

    first: HistoryPoint
    last: HistoryPoint
    points: int
    grid: list[tuple[float, Tick]]  # (y, the bytes it stands for)
    times: list[tuple[float, str, Tick]]  # (x, text-anchor, the UTC time it stands for)
    lines: list[Line]
    targets: list[Target]
    description: str
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    right_x: int = WIDTH - RIGHT
    bottom_y: int = HEIGHT - BOTTOM
    target_h: int = 2 * TARGET_HALF_H


def history_chart(points: Sequence[HistoryPoint]) -> str:
    """The chart alone (the page includes ``chart.html`` with ``chart_figure`` itself)."""
    return render("chart.html", chart=chart_figure(points))


def chart_figure(points: Sequence[HistoryPoint]) -> Chart | None:
    """None without points: there is nothing to draw."""
    if not points:
        return None
    start, end = points[0].time_ms, points[-1].time_ms
    span = max(end - start, 1)
    grid = byte_ticks(max(max(p.remote_log_size_bytes, p.remote_copy_lag_bytes) for p in points))
    top_value = grid[-1].value

    def x(time_ms: int) -> float:
        return LEFT + (time_ms - start) / span * PLOT_W

    def y(value: int) -> float:
        return TOP + PLOT_H - value / top_value * PLOT_H

    lines = [
        Line(field, label, colour, _steps(points, x, y, field), LEFT + index * LEGEND_STEP)
        for index, (field, label, colour) in enumerate(SERIES)
    ]
    return Chart(
        first=points[0],
        last=points[-1],
        points=len(points),
        grid=[(y(tick.value), tick) for tick in grid],
        times=[(x(tick.value), _anchor(x(tick.value)), tick) for tick in time_ticks(start, end)],
        lines=lines,
        targets=[t for f, label, _c in SERIES for t in _targets(points, x, y, f, label)],
        description=_description(points),
    )


def _anchor(at: float) -> str:
    """Centred under its time, unless that would run past the chart's right edge."""
    return "end" if at > WIDTH - RIGHT - TIME_LABEL_HALF_W else "middle"


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


def step_starts(points: Sequence[HistoryPoint], field: str) -> list[tuple[int, int]]:
    """(time, value) where the series takes a new value: the first point of each step."""
    starts: list[tuple[int, int]] = []
    for point in points:
        value = getattr(point, field)
        if not starts or starts[-1][1] != value:
            starts.append((point.time_ms, value))
    return starts


def thin(starts: list[tuple[int, int]], limit: int = MAX_TARGETS) -> list[tuple[int, int]]:
    """At most ``limit`` + 1 steps: the first to begin in each of ``limit`` equal slices of
    time, and the last step (today's figure).

    Each kept step still names its exact value and the time it began; its target then runs on
    to the next kept step, over steps too narrow to point at anyway.
    """
    if len(starts) <= limit:
        return starts
    first, last = starts[0][0], starts[-1][0]
    width = max((last - first) / limit, 1)
    kept: dict[int, tuple[int, int]] = {}
    for start in starts:
        kept.setdefault(min(int((start[0] - first) // width), limit - 1), start)
    return [*(kept[k] for k in sorted(kept) if kept[k] != starts[-1]), starts[-1]]


def _targets(
    points: Sequence[HistoryPoint],
    x: Callable[[int], float],
    y: Callable[[int], float],
    field: str,
    label: str,
) -> list[Target]:
    """One hover target per step of the series, each reaching to where the next begins."""
    starts = thin(step_starts(points, field))
    ends = [x(time_ms) for time_ms, _value in starts[1:]] + [float(WIDTH - RIGHT)]
    found = []
    for (time_ms, value), end in zip(starts, ends, strict=True):
        begin = min(x(time_ms) if len(points) > 1 else LEFT, end - TARGET_MIN_W)
        title = f"{label}: {human_bytes(value)} ({value:,} bytes) at {iso_utc(time_ms)}"
        found.append(
            Target(field, begin, y(value) - TARGET_HALF_H, end - begin, value, time_ms, title)
        )
    return found


def _description(points: Sequence[HistoryPoint]) -> str:
    """What the chart shows, for a screen reader (the SVG's <desc>)."""
    first, last = points[0], points[-1]
    return (
        f"{len(points)} points from {iso_utc(first.time_ms)} to {iso_utc(last.time_ms)}. "
        f"Remote size went from {human_bytes(first.remote_log_size_bytes)} to "
        f"{human_bytes(last.remote_log_size_bytes)}; copy lag from "
        f"{human_bytes(first.remote_copy_lag_bytes)} to {human_bytes(last.remote_copy_lag_bytes)}."
    )
