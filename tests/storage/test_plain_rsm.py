"""The KIP-405 operations of the plain storage manager, on the local bucket, S3 and Azure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.object_backends import open_backend
from tierflow.ids import new_kafka_uuid
from tierflow.rsm import (
    IndexType,
    LogSegmentData,
    RemoteResourceNotFoundError,
    RemoteSegment,
    VerificationError,
)
from tierflow.storage.plain import PlainRemoteStorageManager


@pytest.fixture(params=["local", "s3", "gcs", "azure"])
def rsm(request: pytest.FixtureRequest, tmp_path: Path) -> PlainRemoteStorageManager:
    return PlainRemoteStorageManager(open_backend(request, request.param, tmp_path), "tiered")


def segment_files(tmp_path: Path, *, with_txn: bool) -> LogSegmentData:
    files = {}
    for name, content in {
        "log": b"L" * 5000,
        "index": b"I" * 16,
        "timeindex": b"T" * 24,
        "txnindex": b"X" * 34,
        "snapshot": b"S" * 10,
    }.items():
        path = tmp_path / f"00000000000000000100.{name}"
        path.write_bytes(content)
        files[name] = path
    return LogSegmentData(
        log_segment=files["log"],
        offset_index=files["index"],
        time_index=files["timeindex"],
        transaction_index=files["txnindex"] if with_txn else None,
        producer_snapshot_index=files["snapshot"],
        leader_epoch_index=b"0\n1\n0 0\n",
    )


def a_segment() -> RemoteSegment:
    return RemoteSegment("orders", new_kafka_uuid(), 2, new_kafka_uuid(), 100, 199)


def test_copy_fetch_verify_delete(rsm: PlainRemoteStorageManager, tmp_path: Path):
    segment = a_segment()
    objects = rsm.copy_log_segment_data(segment, segment_files(tmp_path, with_txn=True))
    assert len(objects) == 6
    rsm.verify(segment, objects)
    assert rsm.fetch_log_segment(segment, 10, 19) == b"L" * 10  # end position inclusive
    assert b"".join(rsm.iter_log_segment(segment)) == b"L" * 5000
    assert rsm.fetch_index(segment, IndexType.LEADER_EPOCH) == b"0\n1\n0 0\n"
    assert rsm.fetch_index(segment, IndexType.TRANSACTION) == b"X" * 34
    rsm.delete_log_segment_data(segment)
    rsm.delete_log_segment_data(segment)  # idempotent
    assert list(rsm.objects.list()) == []


def test_missing_transaction_index_is_not_found(rsm: PlainRemoteStorageManager, tmp_path: Path):
    segment = a_segment()
    rsm.copy_log_segment_data(segment, segment_files(tmp_path, with_txn=False))
    with pytest.raises(RemoteResourceNotFoundError, match="TRANSACTION"):
        rsm.fetch_index(segment, IndexType.TRANSACTION)


def test_verify_catches_a_changed_object_and_names_its_key(
    rsm: PlainRemoteStorageManager, tmp_path: Path
):
    segment = a_segment()
    objects = rsm.copy_log_segment_data(segment, segment_files(tmp_path, with_txn=False))
    log_key = rsm.key(segment, "log")
    rsm.objects.put_bytes(log_key, b"L" * 4999 + b"!")  # same size, other bytes
    with pytest.raises(VerificationError, match=f"{log_key}.*sha256"):
        rsm.verify(segment, objects)
    rsm.objects.put_bytes(log_key, b"short")
    with pytest.raises(VerificationError, match="size 5 bytes"):
        rsm.verify(segment, objects)
