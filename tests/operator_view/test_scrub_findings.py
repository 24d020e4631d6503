"""The page's Scrub findings section: a segment whose log was damaged in the bucket and found
by a real scrub run is listed with its object and what is wrong, in the HTML and the JSON; a
clean store says there is none; the section narrows with the view and closes with the finding.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.operator_view.dom import accessibility, parse
from tests.support.scrub_finding import damage_and_scrub, heal, run_scrub, tier_everything
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metrics import open_findings_by_topic
from tierflow.operator_view.app import create_app
from tierflow.operator_view.formatting import utc

NONE_LINE = "No open scrub findings."
LATER_MS = NOW_MS + 3_600_000  # when the page is asked for


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    tier_everything(t)
    return t


def page(t: Tiered) -> TestClient:
    """The page's app over this store, authentication left out (test_page tests it)."""
    app = create_app(auth=lambda: None, settings=lambda: t.settings, clock=lambda: LATER_MS)
    return TestClient(app)


def test_a_damaged_segment_is_listed_with_its_object_and_what_is_wrong(tiered: Tiered) -> None:
    damaged = damage_and_scrub(tiered)
    client = page(tiered)
    html = client.get("/").text
    assert NONE_LINE not in html
    tables, _links = parse(html)
    (row,) = tables["scrub-findings"]
    assert row.attrs["data-segment-id"] == damaged.segment.segment_id
    assert row.cells["topic"].text == "orders"
    assert row.value("partition") == "1"
    assert row.cells["offsets"].text == (
        f"{damaged.segment.start_offset}-{damaged.segment.end_offset}"
    )
    assert row.cells["key"].text == damaged.key
    assert row.cells["finding"].text == damaged.what and damaged.what
    (checked,) = [f.checked_ms for f in tiered.store.open_findings()]
    assert row.value("checked") == str(checked)
    assert row.cells["checked"].text == utc(checked)
    assert "Scrub findings (1)" in html
    assert accessibility(html).tables["scrub-findings"]["aria-label"] == "Scrub findings"

    (found,) = client.get("/api/snapshot").json()["scrub_findings"]
    assert found == {
        "topic": "orders",
        "partition": 1,
        "segment_id": damaged.segment.segment_id,
        "start_offset": damaged.segment.start_offset,
        "end_offset": damaged.segment.end_offset,
        "key": damaged.key,
        "finding": damaged.what,
        "checked_ms": checked,
    }


def test_a_clean_store_says_there_is_none(tiered: Tiered) -> None:
    assert run_scrub(tiered).findings == []
    html = page(tiered).get("/").text
    assert NONE_LINE in html and 'data-empty="scrub-findings"' in html
    assert "scrub-findings" not in parse(html)[0]
    assert "Scrub findings (0)" in html


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("?topic=orders", True),
        ("?topic=payments", False),
        ("?partition=1", True),
        ("?partition=0", False),
    ],
)
def test_the_section_narrows_with_the_view(tiered: Tiered, query: str, shown: bool) -> None:
    damaged = damage_and_scrub(tiered)
    html = page(tiered).get(f"/{query}").text
    listed = [r.attrs["data-segment-id"] for r in parse(html)[0].get("scrub-findings", [])]
    assert listed == ([damaged.segment.segment_id] if shown else [])
    assert (NONE_LINE in html) is not shown


def test_a_check_that_passes_again_closes_the_finding(tiered: Tiered) -> None:
    damaged = damage_and_scrub(tiered)
    heal(damaged)
    assert run_scrub(tiered, start_ms=NOW_MS + 60_000).findings == []
    html = page(tiered).get("/").text
    assert NONE_LINE in html and damaged.key not in html


def test_a_deleted_segments_finding_is_no_longer_open(tiered: Tiered) -> None:
    """Retention (or a repair) deleting the damaged segment leaves nothing to act on: the
    page, the JSON and the gauge's counts all drop it."""
    damaged = damage_and_scrub(tiered)
    assert open_findings_by_topic(tiered.store)["orders"] == 1
    orders = tiered.store.topic("orders")
    row = tiered.store.segment(damaged.segment.segment_id)
    assert delete_remote_segment(tiered.store, tiered.rsm, orders, row, actor="test", now_ms=NOW_MS)
    client = page(tiered)
    assert NONE_LINE in client.get("/").text
    snapshot = client.get("/api/snapshot").json()
    assert (snapshot["scrub_findings"], snapshot["scrub_findings_total"]) == ([], 0)
    assert open_findings_by_topic(tiered.store) == {"orders": 0, "payments": 0}
