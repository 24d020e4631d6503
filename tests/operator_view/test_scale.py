"""The operator view over 1,200 partitions: summed per topic and broker, listed a page at a time.

The store and log dirs are generated (``tests.support.many_partitions``): 4 topics x 300
partitions whose figures differ from one partition to the next. Timings are the benchmark's
(``benchmarks/operator_view_scale.py``); these tests check what is shown.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import fields

import pytest
from fastapi.testclient import TestClient

from tests.operator_view.dom import parse
from tests.support.many_partitions import ManyPartitions, build_many_partitions
from tests.support.settings_env import use_settings
from tierflow.cli.status_commands import register
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metrics import TopicMetrics, aggregate_by_topic, compute_metrics
from tierflow.operator_view import snapshot as snapshot_module
from tierflow.operator_view.aggregate import aggregate
from tierflow.operator_view.app import create_app
from tierflow.operator_view.disk import Leader, read_leaders
from tierflow.operator_view.model import OperatorSnapshot
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import build_snapshot
from tierflow.operator_view.stuck import count_stuck, stuck_segments
from tierflow.tasks.retention import retention_targets

TOPICS, PARTITIONS = 4, 300
TOPIC = "topic-001"
FIGURES = [f.name for f in fields(TopicMetrics) if f.name not in ("topic", "remote")]


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManyPartitions]:
    built = build_many_partitions(
        tmp_path_factory.mktemp("many"), topics=TOPICS, partitions=PARTITIONS
    )
    yield built
    built.store.close()


def snap(m: ManyPartitions, **options: object) -> OperatorSnapshot:
    now_ms = m.now_ms + 3_600_000
    return build_snapshot(m.store, m.settings, now_ms=now_ms, options=ViewOptions(**options))


def test_the_default_view_sums_per_topic_and_lists_no_partition(many: ManyPartitions) -> None:
    found = snap(many)
    assert [t.topic for t in found.topics] == many.topics
    assert all(t.partitions == PARTITIONS for t in found.topics)
    assert found.partitions == [] and found.retention.partitions == []
    page = found.partition_page
    assert (page.listed, page.total, page.pages) == (False, TOPICS * PARTITIONS, 0)
    [broker] = found.brokers
    assert (broker.broker, broker.partitions) == (0, TOPICS * PARTITIONS)


def test_topic_rows_are_compute_metrics_summed(many: ManyPartitions) -> None:
    """The GROUP BY path gives what the per-partition gauges of tierflow.metrics add up to."""
    found = snap(many)
    expected = aggregate_by_topic(compute_metrics(many.store, many.settings.log_dirs))
    assert [t.topic for t in expected] == many.topics
    for row, want in zip(found.topics, expected, strict=True):
        assert {f: getattr(row, f) for f in FIGURES} == {f: getattr(want, f) for f in FIGURES}
        assert row.remote == want.remote
    assert sum(t.remote_copy_lag_segments for t in found.topics) > 0
    assert sum(t.remote[S.DELETE_SEGMENT_STARTED].segments for t in found.topics) > 0


def test_page_two_of_a_topic_holds_the_next_partitions(many: ManyPartitions) -> None:
    found = snap(many, topic=TOPIC, page=2, limit=100)
    assert [(m.topic, m.partition) for m in found.partitions] == [
        (TOPIC, n) for n in range(100, 200)
    ]
    page = found.partition_page
    assert (page.page, page.pages, page.total, page.first) == (2, 3, PARTITIONS, 100)
    assert [(p.topic, p.partition) for p in found.retention.partitions] == [
        (TOPIC, n) for n in range(100, 200)
    ]
    last = snap(many, topic=TOPIC, page=3, limit=128)
    assert [m.partition for m in last.partitions] == list(range(256, 300))
    assert snap(many, topic=TOPIC, page=4, limit=100).partitions == []


def test_a_topics_total_is_the_sum_over_its_pages(many: ManyPartitions) -> None:
    rows = []
    for number in range(1, 4):
        rows += snap(many, topic=TOPIC, page=number, limit=100, history=False).partitions
    assert [m.partition for m in rows] == list(range(PARTITIONS))
    (topic,) = snap(many, topic=TOPIC).topics
    for name in FIGURES[1:]:
        assert getattr(topic, name) == sum(getattr(m, name) or 0 for m in rows), name
    for state, totals in topic.remote.items():
        assert totals.segments == sum(m.remote[state].segments for m in rows), state
        assert totals.bytes == sum(m.remote[state].bytes for m in rows), state


def test_one_partition_number_lists_it_in_every_topic(many: ManyPartitions) -> None:
    found = snap(many, partition=7)
    assert [(m.topic, m.partition) for m in found.partitions] == [(t, 7) for t in many.topics]
    assert all(t.partitions == 1 for t in found.topics)


def test_the_preview_plans_what_the_run_would_of_the_page(many: ManyPartitions) -> None:
    found = snap(many, topic=TOPIC, page=1, limit=60)
    targets = [
        (t["topic"], t["partition"]) for t in retention_targets(many.store) if t["topic"] == TOPIC
    ]
    assert [(p.topic, p.partition) for p in found.retention.partitions] == targets[:60]
    (totals,) = found.retention.topics
    assert totals.remote_segments == sum(p.remote_segments for p in found.retention.partitions)


def test_brokers_sum_their_leader_partitions(many: ManyPartitions) -> None:
    """Three brokers (each partition led by broker number % 3): each row sums its own."""
    leaders = {
        key: Leader(key[1] % 3, leader.log) for key, leader in read_leaders(many.settings).items()
    }
    found = aggregate(many.store, many.store.topics(), leaders)
    assert sorted(found.brokers) == [0, 1, 2]
    per_topic = list(found.topics.values())
    for name in FIGURES:
        assert sum(getattr(b, name) for b in found.brokers.values()) == sum(
            getattr(t, name) for t in per_topic
        ), name
    metrics = compute_metrics(many.store, many.settings.log_dirs)
    for broker, row in found.brokers.items():
        mine = [m for m in metrics if m.partition % 3 == broker]
        assert row.partitions == len(mine)
        assert row.local_bytes == sum(m.local_bytes or 0 for m in mine)
        assert row.remote_copy_lag_bytes == sum(m.remote_copy_lag_bytes or 0 for m in mine)
        assert row.remote_log_size_bytes == sum(m.remote_log_size_bytes for m in mine)


def test_stuck_segments_are_bounded_and_counted(many: ManyPartitions) -> None:
    now_ms, topics = many.now_ms + 3_600_000, many.store.topics()
    total = count_stuck(many.store, topics, now_ms=now_ms, stuck_after_s=60)
    shown = stuck_segments(many.store, topics, now_ms=now_ms, stuck_after_s=60, limit=5)
    everything = stuck_segments(many.store, topics, now_ms=now_ms, stuck_after_s=60, limit=1000)
    assert total == len(everything) > 5 and shown == everything[:5]
    assert {s.state for s in everything} == {S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED}
    found = snap(many, stuck_after_s=60)
    assert found.stuck_total == total and found.stuck == everything[: len(found.stuck)]


@pytest.fixture
def client(many: ManyPartitions) -> TestClient:
    app = create_app(
        auth=lambda: None, settings=lambda: many.settings, clock=lambda: many.now_ms + 3_600_000
    )
    return TestClient(app)


def test_the_page_shows_topic_rows_and_pages_of_partitions(
    many: ManyPartitions, client: TestClient
) -> None:
    tables, links = parse(client.get("/?stuck_after=60").text)
    assert len(tables["topics"]) == TOPICS and "partitions" not in tables
    assert len(tables["events"]) == 50

    html = client.get(f"/?topic={TOPIC}&page=2&limit=100").text
    tables, links = parse(html)
    shown = [(r.attrs["data-topic"], int(r.attrs["data-partition"])) for r in tables["partitions"]]
    assert shown == [(TOPIC, n) for n in range(100, 200)]
    pager = {a["rel"]: a["href"] for a in links if "rel" in a}
    assert pager == {
        "prev": f"?topic={TOPIC}&events=50&limit=100",
        "next": f"?topic={TOPIC}&events=50&limit=100&page=3",
    }
    assert "partitions 101-200 of 300" in html
    total_events = snap(many, topic=TOPIC).events_total
    assert f'data-more="{total_events - 50}"' in html


def test_status_json_is_the_pages_snapshot_api(
    many: ManyPartitions,
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_settings(monkeypatch, many.settings)
    monkeypatch.setattr(snapshot_module, "wall_clock_ms", lambda: many.now_ms + 3_600_000)
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    argv = ["--topic", TOPIC, "--page", "2", "--limit", "100", "--events", "50"]
    args = parser.parse_args(["status", "--json", "--history", *argv])
    capsys.readouterr()
    assert args.func(args) == 0
    cli = json.loads(capsys.readouterr().out)
    api = client.get(f"/api/snapshot?topic={TOPIC}&page=2&limit=100").json()
    assert cli == api
    args = parser.parse_args(["status", *argv])
    assert args.func(args) == 0
    table = capsys.readouterr().out
    listed = [line.split()[1] for line in table.splitlines() if line.split()[:1] == [TOPIC]]
    assert [int(n) for n in listed if n.isdigit()][1:101] == list(range(100, 200))
    assert "page 2 of 3: partitions 101-200 of 300; --page 3 for the next" in table


def test_bad_paging_is_a_one_line_error(
    many: ManyPartitions, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tierflow.cli.commands import CommandError

    use_settings(monkeypatch, many.settings)
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    for argv, message in ((["--page", "0"], "page must be 1 or more"), (["--limit", "0"], "limit")):
        args = parser.parse_args(["status", *argv])
        with pytest.raises(CommandError, match=message):
            args.func(args)
