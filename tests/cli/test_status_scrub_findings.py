"""``tierflow status`` from a shell: a segment whose log was damaged in the bucket and found by a
real scrub run is counted and listed (segment, object, what is wrong), and ``--json`` carries
it as ``scrub_findings``; a clean store says there are none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.process import tierflow, tierflow_env
from tests.support.scrub_finding import damage_and_scrub, run_scrub, tier_everything
from tests.support.tiered import Tiered, build_tiered
from tierflow.units import iso_utc


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path)
    tier_everything(t)
    return t


def status(t: Tiered, *args: str) -> str:
    result = tierflow(tierflow_env(t.settings), "status", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_an_open_finding_is_counted_and_listed(tiered: Tiered) -> None:
    damaged = damage_and_scrub(tiered)
    (checked,) = [f.checked_ms for f in tiered.store.open_findings()]
    segment = damaged.segment

    plain = status(tiered)
    assert "open scrub findings: 1 " in plain
    (line,) = [line for line in plain.splitlines() if damaged.key in line]
    for cell in (
        "orders",
        segment.segment_id,
        f"{segment.start_offset}-{segment.end_offset}",
        damaged.what,
        iso_utc(checked),
    ):
        assert cell in line, (cell, line)

    report = json.loads(status(tiered, "--json"))
    assert report["scrub_findings"] == [
        {
            "topic": "orders",
            "partition": 1,
            "segment_id": segment.segment_id,
            "start_offset": segment.start_offset,
            "end_offset": segment.end_offset,
            "key": damaged.key,
            "finding": damaged.what,
            "checked_ms": checked,
        }
    ]
    assert report["scrub_findings_total"] == 1
    narrowed = json.loads(status(tiered, "--json", "--topic", "payments"))
    assert (narrowed["scrub_findings"], narrowed["scrub_findings_total"]) == ([], 0)


def test_a_clean_store_has_none(tiered: Tiered) -> None:
    assert run_scrub(tiered).findings == []
    plain = status(tiered)
    assert "open scrub findings: 0" in plain.splitlines()
    report = json.loads(status(tiered, "--json"))
    assert (report["scrub_findings"], report["scrub_findings_total"]) == ([], 0)
