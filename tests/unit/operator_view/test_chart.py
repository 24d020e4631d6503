"""The inline SVG chart: steps at each point, both series on one byte axis ticked at round
sizes, round UTC times along the foot, and a hover target per step naming its exact value."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from tierflow.operator_view.chart import LEFT, MAX_TARGETS, RIGHT, WIDTH, history_chart
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


def hover_targets(svg: str) -> list[dict[str, str]]:
    root = ET.fromstring(svg)
    return [
        {**rect.attrib, "title": rect.find(f"{SVG}title").text or ""}
        for rect in root.iter(f"{SVG}rect")
        if rect.get("class") == "hover"
    ]


def iso(ms: int) -> str:
    """ISO-8601 UTC to the millisecond, as tierflow prints every time."""
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def test_hovering_a_step_shows_its_exact_value_and_time() -> None:
    at = 1_795_000_000_000
    points = [
        HistoryPoint(at, 0, 400),
        HistoryPoint(at + 61_000, 300_000, 400),  # copy lag stays: still one step
        HistoryPoint(at + 300_000, 1_363_148, 0),
    ]
    targets = hover_targets(history_chart(points))
    assert [(t["data-series"], int(t["data-bytes"]), int(t["data-time-ms"])) for t in targets] == [
        ("remote_log_size_bytes", 0, at),
        ("remote_log_size_bytes", 300_000, at + 61_000),
        ("remote_log_size_bytes", 1_363_148, at + 300_000),
        ("remote_copy_lag_bytes", 400, at),
        ("remote_copy_lag_bytes", 0, at + 300_000),
    ]
    assert targets[2]["title"] == (
        "Remote size (RemoteLogSizeBytes): 1.30 MiB (1,363,148 bytes) at 2026-11-18T11:11:40.000Z"
    )
    for target in targets:
        assert (
            f"({int(target['data-bytes']):,} bytes) at {iso(int(target['data-time-ms']))}"
            in (target["title"])
        )
        assert float(target["width"]) > 0 and target["fill"] == "transparent"
    # Each target runs from its step to the next one: together they span the plot.
    remote = [t for t in targets if t["data-series"] == "remote_log_size_bytes"]
    assert float(remote[0]["x"]) == LEFT
    assert float(remote[-1]["x"]) + float(remote[-1]["width"]) == WIDTH - RIGHT


def test_thousands_of_points_get_a_bounded_number_of_exact_targets() -> None:
    at = 1_795_000_000_000
    points = [HistoryPoint(at + i * 1000, i * 1024 + i % 7, i % 2) for i in range(3000)]
    value_at = {p.time_ms: p for p in points}
    targets = hover_targets(history_chart(points))
    for field in ("remote_log_size_bytes", "remote_copy_lag_bytes"):
        mine = [t for t in targets if t["data-series"] == field]
        assert 2 <= len(mine) <= MAX_TARGETS + 1
        for target in mine:
            point = value_at[int(target["data-time-ms"])]
            assert int(target["data-bytes"]) == getattr(point, field)
            assert f"({getattr(point, field):,} bytes)" in target["title"]
        assert int(mine[-1]["data-time-ms"]) == points[-1].time_ms, "today's figure is kept"


def test_the_axes_are_ticked_at_round_values() -> None:
    at = 1_795_000_000_000  # 2026-11-18T11:06:40Z
    points = [HistoryPoint(at, 0, 0), HistoryPoint(at + 300_000, 1_000_000, 0)]
    root = ET.fromstring(history_chart(points))
    texts = list(root.iter(f"{SVG}text"))
    ys = [(t.get("data-tick-bytes"), t.text) for t in texts if t.get("class") == "y-tick"]
    assert ys == [
        ("0", "0"),
        ("262144", "256 KiB"),
        ("524288", "512 KiB"),
        ("786432", "768 KiB"),
        ("1048576", "1 MiB"),
    ]
    xs = [(int(t.get("data-tick-ms")), t.text) for t in texts if t.get("class") == "x-tick"]
    assert [label for _ms, label in xs] == [f"11-18 11:{m:02d}" for m in range(7, 12)]
    assert all(ms % 60_000 == 0 for ms, _label in xs)
    assert root.get("role") == "img" and root.get("aria-label")
    description = root.find(f"{SVG}desc")
    assert description is not None and "Remote size went from 0 B to 977 KiB" in description.text
