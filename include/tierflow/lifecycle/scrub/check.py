"""What a tiered segment must pass to be trusted, checked by reading every byte of it.

1. Every index decodes (decrypted and decompressed, when the layout does that) and parses as
   the Kafka file it stands for.
2. The log decodes chunk by chunk (each AES-GCM tag opens under the key ring) to the size the
   segment's row says.
3. Each object has the size and sha256 recorded when it was uploaded (hashed from the reads of
   1 and 2, so each byte is read once), and the storage manager's own check passes (for
   Aiven's layout: the manifest decodes and its chunks and index ranges add up to the objects).

A failed check is a ``Finding`` naming the object and what is wrong. A request the bucket
failed for now (a timeout, a 503) is not a finding: it is raised, and the next run checks the
segment again.
"""

from __future__ import annotations

from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.producer_snapshot import producer_snapshot_entries
from tierflow.kafka.time_index import TimeIndex
from tierflow.kafka.txn_index import txn_index_entries
from tierflow.metadata.models import RemoteLogSegment, RemoteSegmentObject
from tierflow.metadata.scrub_store import Finding
from tierflow.rsm import (
    IndexType,
    ObjectInfo,
    RemoteResourceNotFoundError,
    RemoteSegment,
    RemoteStorageError,
    RemoteStorageManager,
    TransientStorageError,
)
from tierflow.storage.verification import Digesting
from tierflow.transform.errors import KeyRingError
from tierflow.transform.pipeline import INDEX_ORDER

# What a corrupt or unreadable object raises while it is decoded, besides the storage errors
# (the transforms' own errors are RemoteStorageErrors and name their key): each names its cause.
_DECODE_ERRORS = (KafkaFormatError, KeyRingError, ValueError)


def check_segment(
    rsm: RemoteStorageManager,
    segment: RemoteSegment,
    row: RemoteLogSegment,
    objects: list[RemoteSegmentObject],
) -> Finding | None:
    """None when the segment passes every check of the module doc; else the first failure."""
    log_key = rsm.object_keys(segment)[0]
    # Each byte is read once: the decoding's reads are hashed as they pass, and verify takes
    # those hashes rather than reading every object again.
    reader = rsm.reading_through(Digesting)
    try:
        _check_indexes(reader, segment, row)
        _check_log(reader, segment, row, log_key)
        reader.verify(segment, [ObjectInfo(o.key, o.size, o.sha256) for o in objects])
    except TransientStorageError:
        raise
    except RemoteStorageError as exc:
        return Finding(exc.key, exc.reason)
    except _DECODE_ERRORS as exc:
        return Finding(getattr(exc, "key", None) or log_key, str(exc))
    return None


def _check_indexes(
    rsm: RemoteStorageManager, segment: RemoteSegment, row: RemoteLogSegment
) -> None:
    source = f"{segment.describe()} index"
    base = segment.start_offset
    # In the order Aiven's layout stores them, so its one .indexes object is read front to
    # back and hashed on the way (each index is its own object in the plain layout).
    for index_type in INDEX_ORDER:
        try:
            data = rsm.fetch_index(segment, index_type)
        except RemoteResourceNotFoundError:
            if index_type is IndexType.TRANSACTION and row.txn_index_empty:
                continue  # no aborted transactions: Kafka uploads no index for them
            raise
        if index_type is IndexType.OFFSET:
            OffsetIndex.from_bytes(data, base, source=source, log_size=row.segment_size_bytes)
        elif index_type is IndexType.TIMESTAMP:
            TimeIndex.from_bytes(data, base, source=source, last_offset=row.end_offset)
        elif index_type is IndexType.TRANSACTION:
            txn_index_entries(data, source, base_offset=base)
        elif index_type is IndexType.PRODUCER_SNAPSHOT:
            producer_snapshot_entries(data, source)


def _check_log(
    rsm: RemoteStorageManager, segment: RemoteSegment, row: RemoteLogSegment, log_key: str
) -> None:
    decoded = sum(len(piece) for piece in rsm.iter_log_segment(segment))
    if decoded != row.segment_size_bytes:
        raise RemoteStorageError(
            log_key, f"decodes to {decoded} bytes, the segment has {row.segment_size_bytes}"
        )
