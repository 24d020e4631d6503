"""TIERFLOW_STORAGE_LAYOUT=kafka-local through the factory, on a local directory bucket.

The bucket is then laid out as a broker's LocalTieredStorage lays out its ``rsm.config.dir``:
one untransformed file per segment file, the ``.txnindex`` only where the segment has one
(LocalTieredStorage copies it when the file exists, so an empty one stays an empty file).
Files put there as a broker puts them read back; deleting leaves nothing of the segment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.config import Settings
from tierflow.ids import new_kafka_uuid
from tierflow.rsm import (
    IndexType,
    LogSegmentData,
    RemoteResourceNotFoundError,
    RemoteSegment,
    RemoteStorageManager,
)
from tierflow.storage.factory import open_remote_storage

CONTENT = {
    "log": b"L" * 5000,
    "index": b"I" * 16,
    "timeindex": b"T" * 24,
    "txnindex": b"X" * 34,
    "snapshot": b"S" * 10,
    "leader_epoch_checkpoint": b"0\n1\n0 100\n",
}


def kafka_local(base: Path, **overrides: object) -> RemoteStorageManager:
    settings = Settings.embedded(base, storage_layout="kafka-local", **overrides)
    return open_remote_storage(settings)


def segment_files(base: Path, txn: bytes | None) -> LogSegmentData:
    """A rolled segment's files as a broker's log dir holds them (the snapshot is the next
    segment's base offset's)."""
    base.mkdir(parents=True, exist_ok=True)
    paths = {}
    for suffix in ("log", "index", "timeindex", "txnindex"):
        paths[suffix] = base / f"00000000000000000100.{suffix}"
        paths[suffix].write_bytes(CONTENT[suffix] if suffix != "txnindex" else txn or b"")
    snapshot = base / "00000000000000000200.snapshot"
    snapshot.write_bytes(CONTENT["snapshot"])
    return LogSegmentData(
        log_segment=paths["log"],
        offset_index=paths["index"],
        time_index=paths["timeindex"],
        transaction_index=None if txn is None else paths["txnindex"],
        producer_snapshot_index=snapshot,
        leader_epoch_index=CONTENT["leader_epoch_checkpoint"],
    )


def a_segment() -> RemoteSegment:
    return RemoteSegment("orders", new_kafka_uuid(), 2, new_kafka_uuid(), 100, 199)


def on_disk(root: Path, segment: RemoteSegment, suffix: str) -> Path:
    """Where LocalTieredStorage keeps the file under its ``rsm.config.dir``, ``root``."""
    directory = f"{segment.topic}-{segment.partition}-{segment.topic_id}"
    name = f"{segment.start_offset:020d}-{segment.segment_id}.{suffix}"
    return root / "kafka-tiered-storage" / directory / name


def test_copy_fetch_delete_round_trip(tmp_path: Path) -> None:
    rsm, segment = kafka_local(tmp_path), a_segment()
    written = rsm.copy_log_segment_data(
        segment, segment_files(tmp_path / "logs", CONTENT["txnindex"])
    )
    bucket = tmp_path / "bucket"
    assert len(written) == len(CONTENT)
    for suffix, data in CONTENT.items():
        assert on_disk(bucket, segment, suffix).read_bytes() == data
    rsm.verify(segment, written)
    assert rsm.fetch_log_segment(segment, 10, 19) == b"L" * 10
    assert b"".join(rsm.iter_log_segment(segment)) == CONTENT["log"]
    assert rsm.fetch_index(segment, IndexType.TRANSACTION) == CONTENT["txnindex"]
    assert rsm.fetch_index(segment, IndexType.LEADER_EPOCH) == CONTENT["leader_epoch_checkpoint"]
    rsm.delete_log_segment_data(segment)
    rsm.delete_log_segment_data(segment)  # idempotent, as LocalTieredStorage's delete is
    assert not any(p.is_file() for p in bucket.rglob("*"))


def test_no_transaction_index_writes_none_and_fetches_not_found(tmp_path: Path) -> None:
    rsm, segment = kafka_local(tmp_path), a_segment()
    written = rsm.copy_log_segment_data(segment, segment_files(tmp_path / "logs", None))
    assert len(written) == len(CONTENT) - 1
    assert not on_disk(tmp_path / "bucket", segment, "txnindex").exists()
    with pytest.raises(RemoteResourceNotFoundError, match="TRANSACTION"):
        rsm.fetch_index(segment, IndexType.TRANSACTION)


def test_an_empty_transaction_index_is_an_empty_file(tmp_path: Path) -> None:
    rsm, segment = kafka_local(tmp_path), a_segment()
    rsm.copy_log_segment_data(segment, segment_files(tmp_path / "logs", b""))
    assert on_disk(tmp_path / "bucket", segment, "txnindex").read_bytes() == b""
    assert rsm.fetch_index(segment, IndexType.TRANSACTION) == b""


def test_the_prefix_is_a_directory_above_the_brokers(tmp_path: Path) -> None:
    """With a prefix, the broker's rsm.config.dir is ``<bucket>/<prefix>`` (broker-config)."""
    rsm, segment = kafka_local(tmp_path, storage_prefix="tiered/"), a_segment()
    rsm.copy_log_segment_data(segment, segment_files(tmp_path / "logs", None))
    assert on_disk(tmp_path / "bucket" / "tiered", segment, "log").read_bytes() == CONTENT["log"]


def test_files_a_broker_put_there_read_back(tmp_path: Path) -> None:
    segment = a_segment()
    root = tmp_path / "rsm.config.dir"
    for suffix, data in CONTENT.items():
        path = on_disk(root, segment, suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    settings = Settings.embedded(tmp_path, storage_layout="kafka-local")
    rsm = open_remote_storage(settings.updated(remote_storage=str(root)))
    assert rsm.fetch_log_segment(segment, 4990) == b"L" * 10
    assert rsm.fetch_index(segment, IndexType.OFFSET) == CONTENT["index"]
    assert rsm.fetch_index(segment, IndexType.TIMESTAMP) == CONTENT["timeindex"]
    assert rsm.fetch_index(segment, IndexType.PRODUCER_SNAPSHOT) == CONTENT["snapshot"]
    rsm.delete_log_segment_data(segment)
    assert not on_disk(root, segment, "log").exists()
