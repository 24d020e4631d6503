"""A partition's remote segments read back as Kafka batches: what the export and the remote
compaction both read, through the storage manager's ranged-read path (decrypted, decompressed).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tierflow.kafka.read_committed import kafka_python_batches
from tierflow.kafka.txn_index import AbortedTxn, txn_index_entries
from tierflow.rsm import IndexType, RemoteResourceNotFoundError, RemoteSegment, RemoteStorageManager


def remote_aborted(
    rsm: RemoteStorageManager, segments: Sequence[RemoteSegment]
) -> list[AbortedTxn]:
    """The aborted transactions indexed by the segments (their remote ``.txnindex``): given a
    segment and every later one, all that a read_committed fetch of the segment needs."""
    aborted: list[AbortedTxn] = []
    for segment in segments:
        try:
            data = rsm.fetch_index(segment, IndexType.TRANSACTION)
        except RemoteResourceNotFoundError:
            continue  # Kafka creates the file lazily: no abort in this segment
        aborted.extend(txn_index_entries(data, f"{segment.describe()} transaction index"))
    return aborted


def segment_batches(rsm: RemoteStorageManager, segment: RemoteSegment) -> tuple[bytes, Iterator]:
    """The segment's ``.log`` bytes, and its batches as kafka-python reads them."""
    data = b"".join(rsm.iter_log_segment(segment))
    return data, kafka_python_batches(data)
