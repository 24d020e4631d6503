"""``tierflow copy`` and ``status`` over a stopped 3-broker KRaft cluster's log dirs, whose
metadata gives every partition leader -1 (tests.support.stopped_kraft): the copy tiers each
partition from its last leader, ``status`` counts them, and when nothing can be read the error
says why, on one line, and ``--json`` as an object."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.cluster.replicas import cluster_settings
from tests.support.settings_env import use_settings
from tests.support.stopped_kraft import StoppedCluster, stopped_cluster
from tests.support.tiered import eligible
from tierflow.cli import main
from tierflow.kafka.log_dir import LogDir
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store

WARNING_START = "12 partitions have no leader in the KRaft metadata, every replica's broker"


def _registered(stopped: StoppedCluster, settings=None):
    settings = settings or stopped.logs.settings
    store = open_store(settings)
    for name, topic_id in stopped.logs.topics.items():
        store.register_topic(name, topic_id, actor="test", now_ms=0, remote_storage_enable=True)
    return store


@pytest.fixture(params=[True, False], ids=["elr", "no-elr"])
def stopped(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> StoppedCluster:
    cluster = stopped_cluster(tmp_path, elr=request.param)
    _registered(cluster)
    use_settings(monkeypatch, cluster.logs.settings)
    return cluster


def test_copy_tiers_every_partition_from_its_last_leader(
    stopped: StoppedCluster, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert main(["copy"]) == 0
    out = capsys.readouterr().out
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith(WARNING_START), warnings
    store = open_store(stopped.logs.settings)
    for (topic, partition), broker in stopped.last_leaders.items():
        leader = LogDir(stopped.logs.log_dirs[broker]).partition(topic, partition)
        topic_id = stopped.logs.topics[topic]
        rows = store.segments(topic_id, partition)
        assert [(s.start_offset, s.end_offset) for s in rows] == eligible(leader) != []
        assert {s.state for s in rows} == {S.COPY_SEGMENT_FINISHED}
        assert f"  {topic}-{partition}: copied offsets " in out
    assert out.splitlines()[-1].startswith("copied 12 segments (")
    assert main(["verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identical"] == len(report["segments"]) == 12


def test_status_counts_and_shows_the_leaderless_partitions(
    stopped: StoppedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--topic", "orders", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (orders,) = report["topics"]
    sizes = {}
    for (topic, partition), broker in stopped.last_leaders.items():
        if topic == "orders":
            leader = LogDir(stopped.logs.log_dirs[broker]).partition(topic, partition)
            sizes[partition] = (broker, sum(s.size_in_bytes() for s in leader.segments()))
    assert (orders["partitions"], orders["leaderless"]) == (6, 6)
    assert orders["local_bytes"] == sum(size for _broker, size in sizes.values()) > 0
    rows = {p["partition"]: (p["broker"], p["local_bytes"]) for p in report["partitions"]}
    assert rows == sizes and all(p["leaderless"] for p in report["partitions"])
    assert report["unread"] == []
    assert main(["status", "--topic", "orders"]) == 0
    text = capsys.readouterr().out
    (line,) = [line for line in text.splitlines() if line.startswith("leaderless partitions")]
    assert "): orders 6; on this page: orders-0, orders-1" in line


@pytest.mark.parametrize(
    ("case", "error"),
    [
        (
            "last-leader-not-configured",
            "no partition in the log dirs matching --topic orders --partition 1 can be read: "
            "1 partition has no leader in the metadata and no replica could be singled out: "
            "orders-1 (only brokers 3 may lead next)",
        ),
        (
            "live",
            "no partition in the log dirs matching --topic orders --partition 0 can be read: "
            "1 partition has no leader now, in a live cluster that may still elect one: "
            "orders-0 (kraft)",
        ),
    ],
    ids=["last-leader-not-configured", "live"],
)
def test_nothing_readable_says_why_on_one_line_and_in_json(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
    error: str,
) -> None:
    if case == "live":  # only broker 1 stopped: orders-0's follower, broker 2, is up
        cluster = stopped_cluster(tmp_path, elr=False, stop=(1,))
        settings = cluster.logs.settings
    else:  # the whole cluster stopped, broker 3's disks not given: orders-1's last leader
        cluster = stopped_cluster(tmp_path, elr=True)
        assert cluster.last_leaders[("orders", 1)] == 3
        settings = cluster_settings(tmp_path, {b: cluster.logs.log_dirs[b] for b in (1, 2)})
    _registered(cluster, settings)
    use_settings(monkeypatch, settings)
    partition = "0" if case == "live" else "1"
    argv = ["copy", "--topic", "orders", "--partition", partition]
    assert main(argv) == 3
    captured = capsys.readouterr()
    assert captured.err == f"tierflow: error: {error}\n" and captured.out == ""
    assert main([*argv, "--json"]) == 3
    captured = capsys.readouterr()
    assert captured.err == f"tierflow: error: {error}\n"
    report = json.loads(captured.out)
    assert report["error"] == error
    (unread,) = report["unread"]
    assert (unread["topic"], unread["partition"], unread["leaderless"]) == (
        "orders",
        int(partition),
        True,
    )
    # Without the filter the others are copied, and the run says which it could not read.
    assert main(["copy"]) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    assert summary.startswith("copied ") and "; not read: " in summary
    assert f"orders-{partition} (" in summary
