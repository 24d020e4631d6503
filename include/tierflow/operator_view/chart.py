"""An inline SVG step chart of remote size and copy lag: no script, no downloads.

The gauges change only at events, so each line is drawn as steps (flat until the next event).
Both series are bytes and share one axis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from tierflow.operator_view.formatting import human_bytes, utc
from tierflow.operator_view.model import HistoryPoint

WIDTH, HEIGHT = 960, 240
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 14, 40
SERIES = (
    ("remote_log_size_bytes", "Remote size (RemoteLogSizeBytes)", "#2b6cb0"),
    ("remote_copy_lag_bytes", "Copy lag (RemoteCopyLagBytes)", "#dd6b20"),
)
GRID_LINES = 4


def history_chart(points: Sequence[HistoryPoint]) -> str:
    if not points:
        return '<p class="empty">No segment has been copied or deleted yet.</p>'
    first, last = points[0].time_ms, points[-1].time_ms
    start, span = first, max(last - first, 1)
    top_value = max(max(p.remote_log_size_bytes, p.remote_copy_lag_bytes) for p in points)
    top_value = max(top_value, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(time_ms: int) -> float:
        return LEFT + (time_ms - start) / span * plot_w

    def y(value: int) -> float:
        return TOP + plot_h - value / top_value * plot_h

    parts = [
        f'<svg id="history-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} '
        f'{HEIGHT}" width="100%" style="max-width:{WIDTH}px;height:auto" role="img" '
        f'aria-label="Remote size and copy lag over time" data-points="{len(points)}" '
        f'data-last-remote-size="{points[-1].remote_log_size_bytes}" '
        f'data-last-copy-lag="{points[-1].remote_copy_lag_bytes}">'
    ]
    for i in range(GRID_LINES + 1):
        value = round(top_value * i / GRID_LINES)
        level = y(value)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{level:.1f}" y2="{level:.1f}" '
            'stroke="#e2e8f0"/>'
            f'<text x="{LEFT - 6}" y="{level + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#4a5568">{escape(human_bytes(value))}</text>'
        )
    for label, anchor, at in ((utc(start), "start", LEFT), (utc(last), "end", WIDTH - RIGHT)):
        parts.append(
            f'<text x="{at}" y="{HEIGHT - BOTTOM + 16}" text-anchor="{anchor}" font-size="11" '
            f'fill="#4a5568">{escape(label)}</text>'
        )
    for index, (field, label, colour) in enumerate(SERIES):
        path = _steps(points, x, y, field)
        parts.append(
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2" '
            f'data-series="{field}"><title>{escape(label)}</title></path>'
        )
        legend_x = LEFT + index * 300
        parts.append(
            f'<rect x="{legend_x}" y="{HEIGHT - 14}" width="14" height="4" fill="{colour}"/>'
            f'<text x="{legend_x + 20}" y="{HEIGHT - 9}" font-size="12" fill="#1a202c">'
            f"{escape(label)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


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
