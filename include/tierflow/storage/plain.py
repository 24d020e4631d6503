"""A storage manager that uploads each segment file as one untransformed object.

It is the simplest faithful RemoteStorageManager: one object per file, as Kafka's own
LocalTieredStorage does, under Aiven's key layout ("plain") or under LocalTieredStorage's own
("kafka-local", storage/keys.py), where a broker's LocalTieredStorage reads the same objects.
Ranged reads of the log are plain ranged GETs of the ``.log`` object.

What LocalTieredStorage writes, this writes too: the ``.txnindex`` only when the segment has
one (an empty file as an empty object), every other file always.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from tierflow.faults import crash_point
from tierflow.rsm import IndexType, RemoteResourceNotFoundError
from tierflow.storage.keys import AIVEN_KEYS, KeyLayout
from tierflow.storage.object_store import READ_CHUNK, ObjectStore
from tierflow.storage.verification import verify_objects
from tierflow.transform.segment_files import segment_file_stream

if TYPE_CHECKING:  # the RemoteStorageManager protocol's types, only named here
    from tierflow.rsm import LogSegmentData, LogSegmentStream, ObjectInfo, RemoteSegment

LOG_SUFFIX = "log"
INDEX_SUFFIXES: dict[IndexType, str] = {
    IndexType.OFFSET: "index",
    IndexType.TIMESTAMP: "timeindex",
    IndexType.TRANSACTION: "txnindex",
    IndexType.PRODUCER_SNAPSHOT: "snapshot",
    IndexType.LEADER_EPOCH: "leader_epoch_checkpoint",
}


class PlainRemoteStorageManager:
    def __init__(
        self, objects: ObjectStore, prefix: str = "", *, keys: KeyLayout = AIVEN_KEYS
    ) -> None:
        self.objects = objects
        self.prefix = prefix
        self.keys = keys

    def key(self, segment: RemoteSegment, suffix: str) -> str:
        return self.keys.segment_object_key(self.prefix, segment, suffix)

    def reading_through(
        self, wrap: Callable[[ObjectStore], ObjectStore]
    ) -> PlainRemoteStorageManager:
        return PlainRemoteStorageManager(wrap(self.objects), self.prefix, keys=self.keys)

    def object_keys(self, segment: RemoteSegment) -> list[str]:
        suffixes = [LOG_SUFFIX, *INDEX_SUFFIXES.values()]
        return [self.key(segment, suffix) for suffix in suffixes]

    def copy_log_segment_data(
        self, segment: RemoteSegment, data: LogSegmentData
    ) -> list[ObjectInfo]:
        return self.copy_log_segment_stream(segment, segment_file_stream(data, READ_CHUNK))

    def copy_log_segment_stream(
        self, segment: RemoteSegment, stream: LogSegmentStream
    ) -> list[ObjectInfo]:
        """The .log as it arrives, then each index file as one object."""
        written = [self.objects.put_chunks(self.key(segment, LOG_SUFFIX), stream.log_chunks)]
        crash_point("rsm.after_put")
        files = stream.files()
        indexes: list[tuple[IndexType, bytes | None]] = [
            (IndexType.OFFSET, files.offset_index),
            (IndexType.TIMESTAMP, files.time_index),
            (IndexType.PRODUCER_SNAPSHOT, files.producer_snapshot_index),
            (IndexType.TRANSACTION, files.transaction_index),
            (IndexType.LEADER_EPOCH, files.leader_epoch_index),
        ]
        for index_type, data in indexes:
            if data is not None:
                written.append(
                    self.objects.put_bytes(self.key(segment, INDEX_SUFFIXES[index_type]), data)
                )
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
