"""A storage manager that uploads each segment file as one untransformed object.

It is the simplest faithful RemoteStorageManager: one object per file, as Kafka's own
LocalTieredStorage does, under the Aiven key layout. Ranged reads of the log are plain ranged
GETs of the ``.log`` object.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tierflow.faults import crash_point
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.time_index import TimeIndex
from tierflow.rsm import (
    IndexType,
    LogSegmentData,
    ObjectInfo,
    RemoteResourceNotFoundError,
    RemoteSegment,
)
from tierflow.storage.keys import segment_object_key
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.verification import verify_objects

LOG_SUFFIX = "log"
INDEX_SUFFIXES: dict[IndexType, str] = {
    IndexType.OFFSET: "index",
    IndexType.TIMESTAMP: "timeindex",
    IndexType.TRANSACTION: "txnindex",
    IndexType.PRODUCER_SNAPSHOT: "snapshot",
    IndexType.LEADER_EPOCH: "leader_epoch_checkpoint",
}


class PlainRemoteStorageManager:
    def __init__(self, objects: ObjectStore, prefix: str = "") -> None:
        self.objects = objects
        self.prefix = prefix

    def key(self, segment: RemoteSegment, suffix: str) -> str:
        return segment_object_key(self.prefix, segment, suffix)

    def object_keys(self, segment: RemoteSegment) -> list[str]:
        suffixes = [LOG_SUFFIX, *INDEX_SUFFIXES.values()]
        return [self.key(segment, suffix) for suffix in suffixes]

    def copy_log_segment_data(
        self, segment: RemoteSegment, data: LogSegmentData
    ) -> list[ObjectInfo]:
        # The offset and time indexes go up as their valid entries only: a zero-filled
        # preallocated tail (a broker killed before trimming) is not data.
        files: list[tuple[str, Path | bytes]] = [
            (LOG_SUFFIX, data.log_segment),
            (INDEX_SUFFIXES[IndexType.OFFSET], OffsetIndex.valid_file_bytes(data.offset_index)[0]),
            (INDEX_SUFFIXES[IndexType.TIMESTAMP], TimeIndex.valid_file_bytes(data.time_index)[0]),
            (INDEX_SUFFIXES[IndexType.PRODUCER_SNAPSHOT], data.producer_snapshot_index),
        ]
        if data.transaction_index is not None:
            files.append((INDEX_SUFFIXES[IndexType.TRANSACTION], data.transaction_index))
        files.append((INDEX_SUFFIXES[IndexType.LEADER_EPOCH], data.leader_epoch_index))
        written = []
        for suffix, source in files:
            key = self.key(segment, suffix)
            if isinstance(source, bytes):
                written.append(self.objects.put_bytes(key, source))
            else:
                written.append(self.objects.put_file(key, source))
            crash_point("rsm.after_put")
        return written

    def verify(self, segment: RemoteSegment, expected: list[ObjectInfo]) -> None:
        verify_objects(self.objects, expected)

    def fetch_log_segment(
        self, segment: RemoteSegment, start_position: int, end_position: int | None = None
    ) -> bytes:
        end = None if end_position is None else end_position + 1
        return self.objects.read_range(self.key(segment, LOG_SUFFIX), start_position, end)

    def iter_log_segment(self, segment: RemoteSegment) -> Iterator[bytes]:
        return self.objects.iter_chunks(self.key(segment, LOG_SUFFIX))

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> bytes:
        key = self.key(segment, INDEX_SUFFIXES[index_type])
        try:
            return self.objects.read_range(key)
        except RemoteResourceNotFoundError:
            raise RemoteResourceNotFoundError(
                key, f"no {index_type.value} index for {segment.describe()}"
            ) from None

    def delete_log_segment_data(self, segment: RemoteSegment) -> None:
        for key in self.object_keys(segment):
            self.objects.delete([key])
            crash_point("rsm.after_delete")
