"""Which tiered segments a partition's WAL batches become: rolled as a broker rolls a log.

Everything here is decided from the coordinator's batch coordinates alone, before a byte is
read, because COPY_SEGMENT_STARTED must be recorded (with start and end offset, max timestamp,
leader epochs and size) before anything is uploaded:

- a segment rolls before a batch that would take it past ``segment.bytes`` (Kafka's
  LogSegment.shouldRoll on size: a non-empty segment never exceeds it; a batch larger than
  ``segment.bytes`` gets a segment of its own), or whose last offset would not fit the
  indexes' 32-bit relative offsets;
- a segment's size is the sum of its batches' sizes: injecting offsets changes no length;
- its max timestamp is the largest batch max timestamp (the append time for LogAppendTime);
- its leader epochs are Kafka's segment epochs: one entry per epoch change, the first one at
  the segment's base offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tierflow.diskless.coordinates import BatchCoordinate, BatchRun
from tierflow.diskless.errors import DisklessError
from tierflow.kafka.leader_epoch import EpochEntry

KAFKA_SEGMENT_BYTES = 1 << 30  # Kafka's log.segment.bytes default
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class MergedSegment(BatchRun):
    """The batches of one merged segment, in offset order, and what its metadata says."""

    batches: tuple[BatchCoordinate, ...]

    @property
    def size_in_bytes(self) -> int:
        return self.size

    @property
    def max_timestamp_ms(self) -> int:
        return max(b.effective_timestamp for b in self.batches)

    @property
    def leader_epochs(self) -> list[EpochEntry]:
        return segment_epochs(self.batches)


def roll_segments(batches: Sequence[BatchCoordinate], *, segment_bytes: int) -> list[MergedSegment]:
    """Contiguous batches (offset order) cut into segments the way a broker rolls them."""
    if segment_bytes < 1:
        raise ValueError(f"segment.bytes must be positive, got {segment_bytes}")
    segments: list[MergedSegment] = []
    current: list[BatchCoordinate] = []
    size = 0
    for batch in batches:
        if current and batch.base_offset != current[-1].last_offset + 1:
            raise DisklessError(
                f"{batch.topic_id}-{batch.partition}: batch at offset {batch.base_offset} does "
                f"not follow offset {current[-1].last_offset}; WAL offsets must be contiguous"
            )
        if current and (
            size + batch.byte_size > segment_bytes
            or batch.last_offset - current[0].base_offset > _INT32_MAX
        ):
            segments.append(MergedSegment(tuple(current)))
            current, size = [], 0
        current.append(batch)
        size += batch.byte_size
    if current:
        segments.append(MergedSegment(tuple(current)))
    return segments


def segment_epochs(batches: Iterable[BatchCoordinate]) -> list[EpochEntry]:
    """One entry per leader epoch the batches carry, starting where each epoch first appears.

    The coordinator only moves a partition's epoch forward, so batches in offset order never go
    back; if they did, the WAL would be corrupt and merging it must stop.
    """
    entries: list[EpochEntry] = []
    for batch in batches:
        if entries and batch.leader_epoch < entries[-1].epoch:
            raise DisklessError(
                f"{batch.topic_id}-{batch.partition}: batch at offset {batch.base_offset} has "
                f"leader epoch {batch.leader_epoch}, older than {entries[-1].epoch} before it"
            )
        if not entries or batch.leader_epoch > entries[-1].epoch:
            entries.append(EpochEntry(batch.leader_epoch, batch.base_offset))
    return entries


def extend_lineage(lineage: Sequence[EpochEntry], more: Iterable[EpochEntry]) -> list[EpochEntry]:
    """The partition's leader-epoch cache with a new segment's entries appended, as
    LeaderEpochFileCache.assign would: only a newer epoch at a later offset adds an entry."""
    result = list(lineage)
    for entry in more:
        if result and entry.epoch <= result[-1].epoch:
            continue
        if result and entry.start_offset == result[-1].start_offset:
            result.pop()  # the earlier epoch holds no records: the later one replaces it
        result.append(entry)
    return result
