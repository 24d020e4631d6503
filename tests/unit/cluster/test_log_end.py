"""The log end offset from the last segment's tail matches a full read of the segment."""

from __future__ import annotations

from pathlib import Path

from tests.cluster.replicas import offsets, write_replica
from tierflow.cluster.log_end import log_end_offset
from tierflow.demo.broker import generate_log_dir
from tierflow.kafka.log_dir import LogDir


def test_every_demo_partition_ends_where_a_full_read_says(tmp_path: Path) -> None:
    generated = generate_log_dir(tmp_path, now_ms=1_700_000_000_000)
    for log_ in LogDir(tmp_path).partitions():
        expected = generated.partition(log_.topic, log_.partition).log_end_offset
        assert log_end_offset(log_) == log_.log_end_offset() == expected, log_.key


def test_a_torn_last_batch_is_not_counted(tmp_path: Path) -> None:
    layout = write_replica(tmp_path, "orders", 0, [(0, 40)])
    log_ = LogDir(tmp_path).partition("orders", 0)
    active = log_.segments()[-1].log_path
    data = active.read_bytes()
    active.write_bytes(data + data[-200:-100])  # half a batch, as a crash leaves it
    assert log_end_offset(log_) == layout.log_end_offset == offsets(40)


def test_an_index_that_points_past_its_log_is_not_trusted(tmp_path: Path) -> None:
    write_replica(tmp_path, "orders", 0, [(0, 40)])
    log_ = LogDir(tmp_path).partition("orders", 0)
    segment = log_.segments()[-1]
    segment.log_path.write_bytes(segment.log_path.read_bytes()[:700])  # one batch left
    assert log_end_offset(log_) == segment.base_offset + 3


def test_a_partition_without_segments_ends_at_its_start(tmp_path: Path) -> None:
    (tmp_path / "orders-0").mkdir()
    assert log_end_offset(LogDir(tmp_path).partition("orders", 0)) == 0
