"""The inline SVG chart: steps at each point, both series on one byte axis."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from tierflow.operator_view.chart import LEFT, RIGHT, WIDTH, history_chart
from tierflow.operator_view.model import HistoryPoint

SVG = "{http://www.w3.org/2000/svg}"


def paths(svg: str) -> dict[str, str]:
    root = ET.fromstring(svg)
    return {p.get("data-series"): p.get("d") for p in root.iter(f"{SVG}path")}


def test_each_point_is_a_step_and_the_axis_reaches_the_largest_value() -> None:
    points = [HistoryPoint(0, 0, 400), HistoryPoint(1000, 300, 100), HistoryPoint(3000, 300, 0)]
    svg = history_chart(points)
    drawn = paths(svg)
    remote = drawn["remote_log_size_bytes"]
    assert remote.startswith(f"M{LEFT:.1f} ") and remote.count("H") == 2 == remote.count("V")
    xs = [float(v) for v in re.findall(r"H([\d.]+)", remote)]
    assert xs[-1] == WIDTH - RIGHT and xs[0] < xs[-1]
    assert "400 B" in svg  # the top grid line is the largest value of either series
    root = ET.fromstring(svg)
    assert (root.get("data-points"), root.get("data-last-remote-size")) == ("3", "300")
    assert root.get("data-last-copy-lag") == "0"


def test_one_point_is_a_flat_line_and_none_is_a_sentence() -> None:
    drawn = paths(history_chart([HistoryPoint(5, 10, 20)]))
    assert all(d.endswith(f"H{WIDTH - RIGHT}") for d in drawn.values())
    assert "<svg" not in history_chart([])
