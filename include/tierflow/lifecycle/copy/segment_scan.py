"""The copy's check of a segment's batches, made in the pass that uploads it.

The upload reads the ``.log`` once; ``SegmentScan`` watches those reads and checks every batch
on the way (framing, magic, CRC), on the worker core that transforms it. It also learns what
only the batches tell: the largest timestamp and the leader epochs, which COPY_SEGMENT_FINISHED
records, and the CRC-32C of the bytes it uploaded (a repair's proof that a local segment is the
same, lifecycle/scrub/repair.py). A batch that fails raises the KafkaFormatError naming the
file and byte, which fails the upload: the attempt is then removed like any failed upload,
objects and all.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from crc32c import crc32c

from tierflow.faults import crash_point
from tierflow.kafka.batch_scan import BatchFacts, BatchScan, ScannedFacts
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.leader_epoch import EpochEntry


class SegmentScan:
    """The batches of one segment from ``start_offset`` to ``end_offset``, checked as read."""

    def __init__(self, log_path: str, start_offset: int, end_offset: int) -> None:
        self.log_path, self.start_offset, self.end_offset = log_path, start_offset, end_offset
        self.result: ScannedFacts | None = None

    def watch(self, chunks: Iterable[bytes], start: int) -> Iterator[bytes]:
        """Each chunk passed on once checked; a storage retry that reads again starts over."""
        self.result = None
        batches = BatchScan(self.log_path, start, os.stat(self.log_path).st_size)
        seen = _Seen()
        for chunk in chunks:
            seen.add(batches.feed(chunk))
            seen.crc32c = crc32c(chunk, seen.crc32c)
            yield chunk
            crash_point("copy.mid_pass")
        seen.add(batches.finish())
        self.result = self._ended(seen)

    def _ended(self, seen: _Seen) -> ScannedFacts:
        if seen.last_offset is not None and seen.last_offset > self.end_offset:
            raise KafkaFormatError(
                self.log_path,
                None,
                f"last offset {seen.last_offset} is beyond the next segment's base offset "
                f"{self.end_offset + 1}",
            )
        epochs = seen.epochs
        if epochs and epochs[0].start_offset > self.start_offset:
            # Compaction removed the segment's first offsets; its first epoch still starts at
            # the segment's start, as Kafka's epochEntriesInRange clamps it.
            epochs[0] = EpochEntry(epochs[0].epoch, self.start_offset)
        pairs = [(e.epoch, e.start_offset) for e in epochs] or None
        return ScannedFacts(seen.max_timestamp, pairs, seen.crc32c)


class _Seen:
    """The running totals over the batches: largest timestamp, last offset, epoch starts; and
    the CRC-32C of the bytes."""

    def __init__(self) -> None:
        self.crc32c = 0
        self.max_timestamp = -1
        self.last_offset: int | None = None
        self.epochs: list[EpochEntry] = []

    def add(self, batches: Sequence[BatchFacts]) -> None:
        for batch in batches:
            self.max_timestamp = max(self.max_timestamp, batch.max_timestamp)
            self.last_offset = batch.last_offset
            epoch = batch.leader_epoch
            if epoch >= 0 and (not self.epochs or epoch > self.epochs[-1].epoch):
                self.epochs.append(EpochEntry(epoch, batch.base_offset))
