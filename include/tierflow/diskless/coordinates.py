"""What the coordinator hands out: batch coordinates, commit results, truncation results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tierflow.diskless.models import LOG_APPEND_TIME


@dataclass(frozen=True)
class BatchCoordinate:
    """A committed batch: where its bytes are and which offsets the coordinator gave it."""

    object_key: str
    object_id: int
    byte_offset: int
    byte_size: int
    topic_id: str
    partition: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    timestamp_type: str
    batch_max_timestamp: int
    append_time_ms: int

    @property
    def byte_end(self) -> int:
        return self.byte_offset + self.byte_size

    @property
    def effective_timestamp(self) -> int:
        """The max timestamp a classic segment would hold for this batch."""
        if self.timestamp_type == LOG_APPEND_TIME:
            return self.append_time_ms
        return self.batch_max_timestamp


class BatchRun:
    """What a non-empty run of contiguous batches (``batches``, in offset order) spans: shared
    by a partition's batches and a merged segment's."""

    batches: Sequence[BatchCoordinate]

    @property
    def start_offset(self) -> int:
        return self.batches[0].base_offset

    @property
    def end_offset(self) -> int:
        return self.batches[-1].last_offset

    @property
    def size(self) -> int:
        return sum(b.byte_size for b in self.batches)


@dataclass(frozen=True)
class PartitionBatches(BatchRun):
    """A partition's batches in offset order: a merge candidate, or a fetch's coordinates."""

    topic_id: str
    partition: int
    batches: list[BatchCoordinate]

    @property
    def object_keys(self) -> list[str]:
        return sorted({b.object_key for b in self.batches})


@dataclass(frozen=True)
class PrefixDeletion:
    """What deleting a partition's oldest batches did (retention, or dropping merged ones)."""

    topic_id: str
    partition: int
    batches_deleted: int
    bytes_deleted: int
    log_start_offset: int
    diskless_start_offset: int
    objects_marked: list[str] = field(default_factory=list)  # now DELETING (used size 0)
