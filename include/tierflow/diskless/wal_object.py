"""The WAL segment object format of KIP-1163.

One version byte (0), then record batches, grouped by partition into contiguous runs. Batches
are stored as the producer sent them, with their offsets unset: base offset 0 and partition
leader epoch -1 (Kafka's NO_PARTITION_LEADER_EPOCH). Both fields lie before the CRC-covered
range, so the coordinator's offsets can be injected on read without touching the CRC.

The object itself does not say which partition a batch belongs to; the coordinator's batch
coordinates do. A reader of the object alone can only check the framing.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tierflow.diskless.errors import InvalidProduceBatchError, WalFormatError
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.record_batch import BatchHeader, iter_batches_in_buffer

WAL_VERSION = 0
HEADER_SIZE = 1
UNSET_OFFSET = 0
NO_PARTITION_LEADER_EPOCH = -1
_BASE_OFFSET_AT = 0
_LEADER_EPOCH_AT = 12


@dataclass(frozen=True)
class ProduceBatch:
    """One producer batch for one partition, checked and with its offsets unset."""

    topic_id: str
    partition: int
    data: bytes
    offset_count: int  # lastOffsetDelta + 1: how many offsets the coordinator assigns
    max_timestamp: int  # the producer's (CreateTime) max timestamp

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class PlacedBatch:
    """Where a batch landed in a WAL object: what the coordinator is asked to commit."""

    topic_id: str
    partition: int
    byte_offset: int
    byte_size: int
    offset_count: int
    max_timestamp: int


@dataclass(frozen=True)
class WalObjectData:
    data: bytes
    batches: list[PlacedBatch]

    @property
    def size(self) -> int:
        return len(self.data)


def producer_batch(
    topic_id: str, partition: int, data: bytes, *, source: str, position: int = 0
) -> ProduceBatch:
    """Check that ``data`` is exactly one producer-shaped v2 batch and unset its offsets.

    ``position`` is where ``data`` starts in ``source``, so errors name the right byte.

    Refused, with ``source`` and the byte position named: other magics (diskless topics are
    v2 only), a bad CRC or framing, control batches, transactional batches (transactions on
    diskless topics are out of scope, as in KIP-1163) and batches whose offset deltas are not
    0..n-1 (a broker would reject those too).
    """
    if partition < 0:
        raise InvalidProduceBatchError(source, position, f"invalid partition {partition}")
    try:
        headers = list(iter_batches_in_buffer(data, source=source, validate_crc=True))
    except KafkaFormatError as exc:
        at = position + (exc.position or 0)
        raise InvalidProduceBatchError(source, at, exc.reason) from exc
    if len(headers) != 1 or headers[0].size_in_bytes != len(data):
        raise InvalidProduceBatchError(
            source, position, f"expected exactly one record batch of {len(data)} bytes"
        )
    header = headers[0]
    _check_producer_shaped(header, source, position)
    buf = bytearray(data)
    struct.pack_into(">q", buf, _BASE_OFFSET_AT, UNSET_OFFSET)
    struct.pack_into(">i", buf, _LEADER_EPOCH_AT, NO_PARTITION_LEADER_EPOCH)
    return ProduceBatch(
        topic_id=topic_id,
        partition=partition,
        data=bytes(buf),
        offset_count=header.last_offset - header.base_offset + 1,
        max_timestamp=header.max_timestamp,
    )


def _check_producer_shaped(header: BatchHeader, source: str, position: int) -> None:
    at = position + header.position
    if header.magic != 2:
        raise InvalidProduceBatchError(
            source, at, f"magic {header.magic} batch: diskless topics take magic 2 only"
        )
    if header.is_control_batch:
        raise InvalidProduceBatchError(source, at, "control batches cannot be produced")
    if header.is_transactional:
        raise InvalidProduceBatchError(
            source, at, "transactional batches are not supported on diskless topics yet"
        )
    delta = header.last_offset - header.base_offset
    if header.records_count is None or header.records_count != delta + 1:
        raise InvalidProduceBatchError(
            source,
            at,
            f"{header.records_count} record(s) but lastOffsetDelta {delta}: "
            "a producer batch numbers its records 0..n-1",
        )


def encode_wal_object(batches: Iterable[ProduceBatch]) -> WalObjectData:
    """The version byte, then each partition's batches in arrival order as one run.

    Runs are ordered by (topic id, partition), so the same requests always give the same bytes.
    """
    runs: dict[tuple[str, int], list[ProduceBatch]] = {}
    for batch in batches:
        runs.setdefault((batch.topic_id, batch.partition), []).append(batch)
    parts = [bytes([WAL_VERSION])]
    placed: list[PlacedBatch] = []
    position = HEADER_SIZE
    for key in sorted(runs):
        for batch in runs[key]:
            parts.append(batch.data)
            placed.append(
                PlacedBatch(
                    topic_id=batch.topic_id,
                    partition=batch.partition,
                    byte_offset=position,
                    byte_size=batch.size,
                    offset_count=batch.offset_count,
                    max_timestamp=batch.max_timestamp,
                )
            )
            position += batch.size
    return WalObjectData(b"".join(parts), placed)


def check_version(data: bytes, key: str) -> None:
    if len(data) < HEADER_SIZE:
        raise WalFormatError(key, 0, "empty object: no WAL segment version byte")
    if data[0] != WAL_VERSION:
        raise WalFormatError(
            key, 0, f"unsupported WAL segment version {data[0]} (this reader knows {WAL_VERSION})"
        )


def read_wal_object(data: bytes, key: str) -> list[BatchHeader]:
    """The batches of a whole WAL object, CRC-checked; the positions are within the object.

    Raises WalFormatError (or the framing's TruncatedDataError/CorruptRecordError) naming
    ``key`` and the byte position.
    """
    check_version(data, key)
    headers = list(iter_batches_in_buffer(data, source=key, start_position=HEADER_SIZE))
    end = headers[-1].end_position if headers else HEADER_SIZE
    if end != len(data):
        raise WalFormatError(key, end, f"{len(data) - end} byte(s) after the last batch")
    return headers


def check_runs(batches: Sequence[PlacedBatch], total_size: int, key: str) -> None:
    """The layout rules a commit must satisfy: batches inside the object, not overlapping,
    in byte order, and each partition's batches one contiguous run."""
    position = HEADER_SIZE
    seen: set[tuple[str, int]] = set()
    previous: tuple[str, int] | None = None
    for batch in batches:
        where = (batch.topic_id, batch.partition)
        if batch.byte_offset != position or batch.byte_size <= 0:
            raise WalFormatError(
                key,
                batch.byte_offset,
                f"batch of {batch.byte_size} bytes does not follow the previous one "
                f"(expected byte {position})",
            )
        if where != previous and where in seen:
            raise WalFormatError(
                key,
                batch.byte_offset,
                f"partition {batch.topic_id}-{batch.partition} has more than one run",
            )
        if batch.offset_count < 1:
            raise WalFormatError(key, batch.byte_offset, "a batch needs at least one offset")
        seen.add(where)
        previous = where
        position += batch.byte_size
    if position > total_size:
        raise WalFormatError(key, position, f"batches run past the object's {total_size} bytes")
