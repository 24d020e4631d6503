"""Tier the generated broker's partitions, restore them from the bucket into an empty log dir,
and compare with what the broker wrote: every .log byte for byte, the indexes as their valid
entries, the producer snapshots, the topic id, the epochs and the checkpoints. Then the limits:
a restore up to an offset, a rerun that changes nothing, and the directories it refuses."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from tests.support.restored import assert_restored_as_written, finished_rows, restore_events
from tests.support.settings_env import use_settings
from tests.support.tiered import LAYOUTS, Tiered, build_tiered
from tierflow.cli import main
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    read_leader_epoch_checkpoint,
)
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.record_batch import iter_batches
from tierflow.kafka.time_index import TimeIndex
from tierflow.restore.plan import RestoreError
from tierflow.restore.request import restore_partition


@pytest.fixture(params=sorted(LAYOUTS))
def tiered(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    t = build_tiered(tmp_path, layout=request.param)
    use_settings(monkeypatch, t.settings)
    assert main(["copy", "--owner", "test"]) == 0
    return t


def restore(t: Tiered, log_: PartitionLog, target: Path, **options: object):
    return restore_partition(
        t.store, t.rsm, topic=log_.topic, partition=log_.partition, log_dir=target, **options
    )


def files_as_they_are(root: Path) -> dict[Path, tuple[int, bytes]]:
    """Every file under ``root`` with its modification time and bytes."""
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()}


def test_every_partition_restores_as_the_broker_wrote_it(tiered: Tiered, tmp_path: Path) -> None:
    target = tmp_path / "restored"
    for log_ in tiered.logs():
        report = restore(tiered, log_, target)
        assert report.segments == len(finished_rows(tiered.store, log_)) >= 1
        assert_restored_as_written(tiered.store, log_, target)
        assert (report.written_segments, report.unchanged) == (report.segments, False)
        # A rerun of a finished restore writes nothing, records nothing and says so.
        before = files_as_they_are(target)
        events = restore_events(tiered, log_)
        again = restore(tiered, log_, target)
        assert (again.unchanged, again.written_segments, again.already_restored) == (True, 0, 0)
        assert again.describe().startswith(f"{log_.path.name}: already restored, ")
        assert "nothing written" in again.describe()
        assert files_as_they_are(target) == before
        assert restore_events(tiered, log_) == events == 1, "one RESTORED event per restore"


def test_a_restore_to_an_offset_ends_with_the_batch_holding_it(
    tiered: Tiered, tmp_path: Path
) -> None:
    log_ = tiered.log("orders", 0)
    rows = finished_rows(tiered.store, log_)
    assert len(rows) >= 2
    middle = (rows[1].start_offset + rows[1].end_offset) // 2
    original = next(s for s in log_.segments() if s.base_offset == rows[1].start_offset)
    holding = next(b for b in iter_batches(original.log_path) if b.last_offset >= middle)
    end = holding.position + holding.size_in_bytes
    assert holding.last_offset < rows[1].end_offset, "the cut is inside the segment"

    target = tmp_path / "restored"
    report = restore(tiered, log_, target, to_offset=middle)
    assert (report.segments, report.next_offset) == (2, holding.last_offset + 1)
    restored = target / log_.path.name
    assert sorted(p.name for p in restored.glob("*.log")) == [
        f"{row.start_offset:020d}.log" for row in rows[:2]
    ]
    cut_log = restored / original.log_path.name
    assert cut_log.read_bytes() == original.log_path.read_bytes()[:end]
    index = OffsetIndex.read(restored / f"{original.log_path.stem}.index", original.base_offset)
    assert index.entries and all(e.position < end for e in index.entries)
    times = TimeIndex.read(restored / f"{original.log_path.stem}.timeindex", original.base_offset)
    assert all(e.offset <= holding.last_offset for e in times.entries)
    assert log_.producer_snapshot_path(rows[1].end_offset + 1).name not in {
        p.name for p in restored.iterdir()
    }, "no snapshot past the cut: the broker rebuilds producer state from the one before"
    recovery = read_offset_checkpoint(target / RECOVERY_POINT_OFFSET_CHECKPOINT)
    assert recovery[(log_.topic, log_.partition)] == holding.last_offset + 1
    epochs = read_leader_epoch_checkpoint(restored / LEADER_EPOCH_CHECKPOINT)
    assert all(e.start_offset <= holding.last_offset for e in epochs)
    again = restore(tiered, log_, target, to_offset=middle)
    assert again.unchanged, "the cut segment counts as complete on a rerun"
    # The whole partition over the cut one: the last segment written whole, with its snapshot.
    whole = restore(tiered, log_, target)
    assert (whole.unchanged, whole.segments) == (False, len(rows))
    assert_restored_as_written(tiered.store, log_, target)


def test_a_restore_to_a_timestamp_ends_with_the_segment_reaching_it(
    tiered: Tiered, tmp_path: Path
) -> None:
    log_ = tiered.log("orders", 0)
    rows = finished_rows(tiered.store, log_)
    # Later than the first segment's records: the second holds the first record at or after it.
    report = restore(tiered, log_, tmp_path / "a", to_timestamp=rows[0].max_timestamp_ms + 1)
    assert (report.segments, report.next_offset) == (2, rows[1].end_offset + 1)
    report = restore(tiered, log_, tmp_path / "b", to_timestamp=rows[0].max_timestamp_ms)
    assert report.segments == 1
    report = restore(tiered, log_, tmp_path / "c", to_timestamp=rows[-1].max_timestamp_ms + 1)
    assert report.segments == len(rows), "no record that late: everything remote"


def test_a_dry_run_writes_nothing(tiered: Tiered, tmp_path: Path) -> None:
    log_ = tiered.log("orders", 0)
    report = restore(tiered, log_, tmp_path / "restored", dry_run=True)
    assert report.segments == len(finished_rows(tiered.store, log_)) and report.dry_run
    assert not (tmp_path / "restored").exists()


def test_a_directory_in_use_is_refused_untouched(tiered: Tiered, tmp_path: Path) -> None:
    log_ = tiered.log("orders", 0)
    target = tmp_path / "restored"
    partition_dir = target / log_.path.name
    partition_dir.mkdir(parents=True)
    (partition_dir / "00000000000000099999.log").write_bytes(b"a broker's data")
    with pytest.raises(RestoreError, match=r"not empty .* such as 00000000000000099999\.log"):
        restore(tiered, log_, target)
    assert [p.name for p in partition_dir.iterdir()] == ["00000000000000099999.log"]
    assert not (target / LOG_START_OFFSET_CHECKPOINT).exists()

    other = tmp_path / "locked"
    other.mkdir()
    with open(other / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running broker holds it
        with pytest.raises(RestoreError, match="held by a running broker"):
            restore(tiered, log_, other)
    assert sorted(p.name for p in other.iterdir()) == [".lock"]
    restore(tiered, log_, other)  # the broker stopped: its .lock stays, no longer held
    assert_restored_as_written(tiered.store, log_, other)
