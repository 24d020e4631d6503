"""Deleted topics seen from the broker's log dirs alone (no bootstrap server configured)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.tiered import NOW_MS, Tiered
from tests.unit.lifecycle.removal.support import (
    held_broker,
    log_dir,
    recreate,
    remove_partition_dir,
    rename_for_removal,
    topic_id,
)
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.removal.detect import (
    ALREADY_MARKED,
    DISKLESS_NO_LOG_DIRS,
    LogDirsUnavailableError,
    find_deleted_topics,
    scan_log_dirs,
)
from tierflow.lifecycle.removal.remove import mark_topic_deleted


@pytest.fixture
def broker(tmp_path: Path) -> Tiered:
    return held_broker(tmp_path)


def detect(t: Tiered, *extra_dirs: Path):
    diskless = {d.topic_id for d in DisklessCoordinator.for_store(t.store).diskless_topics()}
    return find_deleted_topics(
        t.store, log_dirs=[*t.settings.log_dirs, *extra_dirs], diskless_topic_ids=diskless
    )


def kept_reason(report, name: str) -> str:
    return next(k.reason for k in report.kept if k.name == name)


def test_live_topics_are_kept(broker: Tiered):
    report = detect(broker)
    assert report.source == "log-dirs"
    assert report.deleted == []
    assert "live partitions [0, 1]" in kept_reason(report, "orders")
    assert "live partitions [0]" in kept_reason(report, "payments")


@pytest.mark.parametrize("suffix", ["-delete", "-stray"])
def test_partition_dirs_renamed_by_kafka_mean_deleted(broker: Tiered, suffix: str):
    renamed = [rename_for_removal(broker, "orders", p, suffix) for p in (0, 1)]
    report = detect(broker)
    [deleted] = report.deleted
    assert (deleted.name, deleted.topic_id, deleted.source) == (
        "orders",
        topic_id(broker, "orders"),
        "log-dirs",
    )
    assert all(path.name in deleted.reason for path in renamed)
    assert "payments" in {k.name for k in report.kept}


def test_partition_dirs_removed_entirely_mean_deleted(broker: Tiered):
    remove_partition_dir(broker, "payments", 0)
    [deleted] = detect(broker).deleted
    assert deleted.name == "payments"
    assert "no partition dirs" in deleted.reason


def test_one_partition_left_keeps_the_topic(broker: Tiered):
    """A replica moved off this broker is not a deleted topic while another one stays."""
    rename_for_removal(broker, "orders", 1)
    report = detect(broker)
    assert report.deleted == []
    assert "live partitions [0]" in kept_reason(report, "orders")


def test_recreated_topic_is_reported_under_its_old_id(broker: Tiered):
    old_id = topic_id(broker, "orders")
    for p in (0, 1):
        rename_for_removal(broker, "orders", p)
    new_id = recreate(broker, "orders", 3)
    [deleted] = detect(broker).deleted
    assert (deleted.name, deleted.topic_id) == ("orders", old_id)
    assert new_id in deleted.reason and "recreated" in deleted.reason


def test_recreation_counts_even_for_a_topic_never_held(broker: Tiered):
    """A live dir under another id is positive evidence, unlike mere absence."""
    broker.store.register_topic("audit", new_kafka_uuid(), actor="test", now_ms=NOW_MS)
    recreate(broker, "audit", 1)
    assert [d.name for d in detect(broker).deleted] == ["audit"]


def test_absence_of_a_topic_never_held_proves_nothing(broker: Tiered):
    broker.store.register_topic("audit", new_kafka_uuid(), actor="test", now_ms=NOW_MS)
    report = detect(broker)
    assert report.deleted == []
    assert "never held" in kept_reason(report, "audit")


def test_a_partition_moving_between_log_dirs_keeps_the_topic(broker: Tiered, tmp_path: Path):
    """Kafka copies into ``-future`` in the target dir, then swaps: never a deletion."""
    other = tmp_path / "kafka-logs-2"
    other.mkdir()
    rename_for_removal(broker, "payments", 0, "-future").rename(
        other / f"payments-0.{'ab' * 16}-future"
    )
    report = detect(broker, other)
    assert report.deleted == []
    assert "moving between log dirs" in kept_reason(report, "payments")


def test_a_dir_without_partition_metadata_is_matched_by_name(broker: Tiered):
    """Brokers before 2.8 write no topic id; a live dir of that name keeps the topic."""
    os.remove(log_dir(broker) / "payments-0" / "partition.metadata")
    assert detect(broker).deleted == []


def test_corrupt_partition_metadata_is_matched_by_name(broker: Tiered):
    (log_dir(broker) / "payments-0" / "partition.metadata").write_text("garbage")
    assert detect(broker).deleted == []


def test_topics_already_marked_are_not_candidates(broker: Tiered):
    mark_topic_deleted(broker.store, "orders", actor="test", now_ms=NOW_MS)
    for p in (0, 1):
        rename_for_removal(broker, "orders", p)
    report = detect(broker)
    assert report.deleted == []
    assert kept_reason(report, "orders") == ALREADY_MARKED


def test_a_partly_marked_topic_is_still_a_candidate(broker: Tiered):
    """A mark interrupted after one partition must be finished by the next detection."""
    broker.store.mark_partition_delete(topic_id(broker, "orders"), 0, actor="test", now_ms=NOW_MS)
    for p in (0, 1):
        rename_for_removal(broker, "orders", p)
    assert [d.name for d in detect(broker).deleted] == ["orders"]


def test_retired_topics_are_ignored(broker: Tiered):
    old_id = topic_id(broker, "orders")
    mark_topic_deleted(broker.store, "orders", actor="test", now_ms=NOW_MS)
    broker.store.retire_topic_name(old_id, actor="test", now_ms=NOW_MS)
    for p in (0, 1):
        remove_partition_dir(broker, "orders", p)
    report = detect(broker)
    assert report.deleted == []
    assert old_id not in {k.topic_id for k in report.kept}


def test_a_missing_log_dir_raises_instead_of_reporting_everything_deleted(
    broker: Tiered, tmp_path: Path
):
    missing = tmp_path / "unmounted"
    with pytest.raises(LogDirsUnavailableError, match=str(missing)) as caught:
        detect(broker, missing)
    assert caught.value.path == missing


def test_an_empty_log_dir_raises(broker: Tiered, tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LogDirsUnavailableError, match="does not look like a Kafka log dir"):
        detect(broker, empty)


def test_a_file_in_place_of_a_log_dir_raises(broker: Tiered, tmp_path: Path):
    stray_file = tmp_path / "not-a-dir"
    stray_file.write_text("")
    with pytest.raises(LogDirsUnavailableError, match="is not a directory"):
        detect(broker, stray_file)


def test_a_broker_dir_whose_partitions_are_all_gone_is_still_trusted(broker: Tiered):
    """meta.properties and the checkpoints show the dir is the broker's, even with no topics."""
    for name, p in (("orders", 0), ("orders", 1), ("payments", 0)):
        remove_partition_dir(broker, name, p)
    assert sorted(d.name for d in detect(broker).deleted) == ["orders", "payments"]


def test_scan_classifies_live_and_renamed_dirs(broker: Tiered):
    rename_for_removal(broker, "orders", 0)
    rename_for_removal(broker, "orders", 1, "-future")
    (log_dir(broker) / "not-a-partition").mkdir()
    (log_dir(broker) / f"orders-x.{'ab' * 16}-delete").mkdir()
    found = {(d.topic, d.partition, d.kind) for d in scan_log_dirs(broker.settings.log_dirs)}
    assert found == {("orders", 0, "delete"), ("orders", 1, "future"), ("payments", 0, "live")}


def test_a_cut_short_delete_dir_is_recognised_by_its_topic_id(broker: Tiered):
    """Kafka cuts long topic names in -delete names; partition.metadata still names the id."""
    remove_partition_dir(broker, "orders", 1)
    cut = rename_for_removal(broker, "orders", 0).rename(
        log_dir(broker) / f"ord-0.{'cd' * 16}-delete"
    )
    [deleted] = detect(broker).deleted
    assert deleted.name == "orders" and cut.name in deleted.reason


def test_the_report_is_json(broker: Tiered):
    rename_for_removal(broker, "payments", 0)
    report = json.loads(json.dumps(detect(broker).as_dict()))
    assert report["source"] == "log-dirs"
    assert [d["name"] for d in report["deleted"]] == ["payments"]
    assert {"name", "topic_id", "reason", "source"} <= set(report["deleted"][0])
    assert [k["name"] for k in report["kept"]] == ["orders"]


def test_a_new_incarnation_is_not_blamed_for_the_old_ones_delete_dirs(broker: Tiered):
    old_id = topic_id(broker, "orders")
    mark_topic_deleted(broker.store, "orders", actor="test", now_ms=NOW_MS)
    broker.store.retire_topic_name(old_id, actor="test", now_ms=NOW_MS)
    rename_for_removal(broker, "orders", 0)
    remove_partition_dir(broker, "orders", 1)
    new_id = recreate(broker, "orders", 1)
    broker.store.register_topic("orders", new_id, actor="test", now_ms=NOW_MS)
    report = detect(broker)
    assert report.deleted == []
    assert kept_reason(report, "orders") == "present in the log dirs (live partitions [0])"


def test_a_diskless_topic_without_log_dirs_is_not_taken_for_deleted(broker: Tiered):
    """Diskless topics never have partition dirs: from the log dirs alone they must be kept
    (their merged, tiered partitions have rows in the store all the same)."""
    clicks = new_kafka_uuid()
    broker.store.register_topic("clicks", clicks, actor="test", now_ms=NOW_MS)
    DisklessCoordinator.for_store(broker.store).register_topic(clicks, 2, now_ms=NOW_MS)
    for p in (0, 1):
        broker.store.ensure_partition(
            clicks, p, log_start_offset=0, local_log_start_offset=0, now_ms=NOW_MS
        )
    report = detect(broker)
    assert report.deleted == []
    assert kept_reason(report, "clicks") == DISKLESS_NO_LOG_DIRS
