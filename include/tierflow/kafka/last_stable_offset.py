"""The last stable offset (LSO): the upper bound of what tiered storage may copy.

Kafka's copy task takes ``log.lastStableOffset`` as its bound, not the high watermark: a segment
whose successor starts above the first offset of a still-open transaction stays local until the
transaction ends. The broker knows its LSO from ProducerStateManager; offline it is rebuilt from
what the broker wrote: the newest producer snapshot at or below the high watermark gives the
transactions open there, and the batch headers after it (up to the high watermark) open and
complete the rest. As in Kafka, a transaction is stable only once the high watermark has passed
its marker, so markers at or above the high watermark do not count.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.producer_snapshot import read_producer_snapshot
from tierflow.kafka.segment import LogSegment

log = logging.getLogger(__name__)

NO_TXN = -1


@dataclass(frozen=True)
class StableOffset:
    """The LSO, and why it is below the high watermark when it is."""

    offset: int
    high_watermark: int
    open_transaction_producer: int | None = None  # whose transaction holds it back, if one does
    unreadable: str | None = None  # a batch that could not be read held it back instead

    @property
    def held_back(self) -> bool:
        return self.offset < self.high_watermark


def last_stable_offset(
    log_: PartitionLog,
    high_watermark: int,
    *,
    needed_below: int | None = None,
    segments: list[LogSegment] | None = None,
) -> StableOffset:
    """The partition's LSO at ``high_watermark``, never above it.

    ``needed_below``: the caller looks at the LSO only below this offset (a copy: the active
    segment's base, as nothing from there on is copied). Once the walk reaches it with no
    transaction open, the LSO is at least that, and the high watermark is returned without
    reading on: a broker snapshots its producers at every roll, so that is the whole active
    segment's batches the walk would read, up to a second for 512 MiB, on every run.
    ``segments``: the listing the caller already made, rather than a second one."""
    start, open_txns = _open_at_snapshot(log_, high_watermark)
    segments = log_.segments() if segments is None else segments
    for index, segment in enumerate(segments):
        next_base = segments[index + 1].base_offset if index + 1 < len(segments) else None
        if next_base is not None and next_base <= start:
            continue  # wholly below the snapshot: its transactions are in the snapshot
        if segment.base_offset >= high_watermark:
            break
        if needed_below is not None and segment.base_offset >= needed_below and not open_txns:
            break  # nothing open below it: whatever opens later holds back nothing needed
        try:
            for batch in segment.batches(validate_crc=False):
                if batch.base_offset >= high_watermark:
                    break
                if batch.last_offset < start or not batch.is_transactional:
                    continue
                if batch.is_control_batch:
                    open_txns.pop(batch.producer_id, None)
                else:
                    open_txns.setdefault(batch.producer_id, batch.base_offset)
        except KafkaFormatError as exc:
            # Nothing below this segment's base can belong to a transaction opened in it.
            log.warning(
                "%s: copying stays below it, its transactions unknown: %s", segment.log_path, exc
            )
            bound = min(high_watermark, segment.base_offset)
            return _stable(open_txns, bound, high_watermark, unreadable=str(exc))
    return _stable(open_txns, high_watermark, high_watermark)


def _stable(
    open_txns: dict[int, int], bound: int, high_watermark: int, unreadable: str | None = None
) -> StableOffset:
    """The first offset of the oldest open transaction, if it is below ``bound``."""
    oldest = min(open_txns.items(), key=lambda item: item[1], default=None)
    if oldest is not None and oldest[1] < bound:
        producer, first = oldest
        return StableOffset(first, high_watermark, open_transaction_producer=producer)
    return StableOffset(bound, high_watermark, unreadable=unreadable)


def _open_at_snapshot(log_: PartitionLog, high_watermark: int) -> tuple[int, dict[int, int]]:
    """(offset to scan from, producer id -> first offset of its open transaction).

    The newest readable snapshot at or below the high watermark; without one, the scan starts at
    the local log's first segment with nothing open.
    """
    for offset in reversed(log_.snapshot_offsets()):
        if offset > high_watermark:
            continue
        path = log_.producer_snapshot_path(offset)
        try:
            entries = read_producer_snapshot(path)
        except KafkaFormatError as exc:
            log.warning("%s: skipped, an older snapshot or the log is read instead: %s", path, exc)
            continue
        return offset, {
            e.producer_id: e.current_txn_first_offset
            for e in entries
            if e.current_txn_first_offset != NO_TXN
        }
    return -1, {}
