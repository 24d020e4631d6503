"""``tierflow diskless register`` makes consolidated topics by default, ``merge`` by hand, and
the diskless log start following remote retention of merged segments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.diskless.diskless_support import NOW, TOPIC, TOPIC_ID
from tests.diskless.merge_support import PARTITIONS, SEGMENT_BYTES, consolidated
from tests.support.settings_env import use_settings
from tierflow.cli import main
from tierflow.config import Settings
from tierflow.diskless.errors import DisklessOffsetOutOfRangeError
from tierflow.diskless.merge import merge_partition
from tierflow.diskless.retention import follow_tiered_log_start
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.read.diskless import fetch_diskless
from tierflow.runtime import open_store


def test_new_diskless_topics_are_merged_unless_told_otherwise_and_stay_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.embedded(tmp_path)
    use_settings(monkeypatch, settings)
    assert main(["diskless", "register", "clicks", "--partitions", "1"]) == 0
    assert "merged into tiered storage" in capsys.readouterr().out
    off = ["--config", "remote.storage.enable=false"]
    assert main(["diskless", "register", "logs", "--partitions", "1", *off]) == 0
    assert "WAL only (remote.storage.enable=false)" in capsys.readouterr().out
    store = open_store(settings)
    assert store.topic("clicks").remote_storage_enable
    assert not store.topic("logs").remote_storage_enable
    assert main(["diskless", "register", "clicks", "--partitions", "2", *off]) == 2
    assert "its remote.storage.enable cannot change" in capsys.readouterr().err
    assert main(["diskless", "register", "clicks", "--partitions", "2"]) == 0, "idempotent"
    assert store.topic("clicks").remote_storage_enable


def test_merge_command_dry_run_then_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world = consolidated(tmp_path, objects=2, committed_at=NOW - 10**12)  # long ago
    use_settings(monkeypatch, world.settings)
    merge = ["diskless", "merge", "--segment-bytes", str(SEGMENT_BYTES)]
    assert main([*merge, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"{TOPIC}-0: would merge 0-" in out
    assert world.store.segments(TOPIC_ID, 0) == []
    assert main([*merge, "--topic", TOPIC, "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [r["partition"] for r in reports] == list(range(PARTITIONS))
    for report in reports:
        rows = world.store.segments(TOPIC_ID, report["partition"])
        assert [s["segment_id"] for s in report["merged"]] == [r.segment_id for r in rows]
        assert report["dropped_batches"] == 2 * 6, "every batch of its two objects"
        assert world.coordinator.partition_batches(TOPIC_ID, report["partition"]) == []
    assert main([*merge, "--min-age-ms", "0"]) == 0
    assert "merged 0 segments over 3 partitions" in capsys.readouterr().out


def test_the_diskless_log_start_follows_remote_retention(tmp_path: Path) -> None:
    world = consolidated(tmp_path, objects=2)
    merge_partition(
        world.coordinator, world.store, world.rsm, world.objects, TOPIC_ID, 0,
        world.options(), owner="t", clock=lambda: NOW,
    )  # fmt: skip
    first, second = world.store.segments(TOPIC_ID, 0, states=[S.COPY_SEGMENT_FINISHED])[:2]
    assert (
        follow_tiered_log_start(world.coordinator, world.store, now_ms=NOW, delete_grace_ms=0) == []
    )
    # What remote retention does first when it expires the oldest merged segment (Kafka's E6).
    world.store.advance_log_start_offset(TOPIC_ID, 0, second.start_offset, actor="t", now_ms=NOW)
    (moved,) = follow_tiered_log_start(
        world.coordinator, world.store, now_ms=NOW, delete_grace_ms=0
    )
    assert (moved.log_start_offset, moved.batches_deleted) == (second.start_offset, 0)
    log = world.coordinator.log(TOPIC_ID, 0)
    assert log.log_start_offset == second.start_offset and log.diskless_start_offset > 0
    with pytest.raises(
        DisklessOffsetOutOfRangeError, match=f"log start offset {second.start_offset}"
    ):
        fetch_diskless(world.coordinator, world.objects, TOPIC, 0, first.start_offset)
    assert world.coordinator.log(TOPIC_ID, 1).log_start_offset == 0, "others untouched"
