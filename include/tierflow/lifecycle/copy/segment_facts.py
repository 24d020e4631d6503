"""Everything the copy needs to know about a local segment before COPY_SEGMENT_STARTED.

``plan_segment`` reads no batch: files missing, indexes that disagree with the log, a bad
checkpoint fail here, naming the file, before any state exists. The batches themselves (CRC,
framing) are checked in the pass that uploads them (segment_scan.py), so the ``.log`` is read
once; a bad batch there ends the attempt like a failed upload, removed objects and all.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from tierflow.kafka.errors import KafkaFormatError, MissingFileError
from tierflow.kafka.index_file import SparseIndex
from tierflow.kafka.leader_epoch import EpochEntry, entries_before, leader_epoch_checkpoint_bytes
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.segment import LogSegment
from tierflow.kafka.segment_slice import SegmentSlice, slice_segment
from tierflow.kafka.time_index import TimeIndex
from tierflow.kafka.txn_index import AbortedTxn, read_txn_index, txn_index_entries
from tierflow.lifecycle.copy.candidates import CopyCandidate
from tierflow.lifecycle.copy.segment_scan import SegmentScan
from tierflow.rsm import LogSegmentData
from tierflow.transform.chunking import read_chunks

log = logging.getLogger(__name__)

SCAN_READ = 4 << 20  # inspect_segment's reads: the chunk size of the chunked layout


@dataclass(frozen=True)
class SegmentFacts:
    max_timestamp_ms: int
    leader_epochs: list[EpochEntry]
    size_in_bytes: int
    txn_index_empty: bool
    data: LogSegmentData

    @property
    def leader_epoch(self) -> int:
        return self.leader_epochs[-1].epoch


def plan_segment(log: PartitionLog, candidate: CopyCandidate) -> SegmentFacts:
    """What COPY_SEGMENT_STARTED records, from everything but the ``.log``'s batches: the files
    present, the indexes checked, the size, and the leader epochs Kafka takes (its leader-epoch
    cache's entries in range; the first batch's epoch when the checkpoint has none there). The
    batches are checked as they are uploaded (segment_scan.py); until then the largest
    timestamp is unknown (-1), and FINISHED records it with the batches' epochs."""
    return _planned(log, candidate)[0]


def _planned(log: PartitionLog, candidate: CopyCandidate) -> tuple[SegmentFacts, int]:
    """``plan_segment``'s facts, and the ``.log`` position the upload starts from (a slice's
    first batch, else 0)."""
    segment = candidate.segment
    for path in (segment.log_path, segment.index_path, segment.time_index_path):
        if not path.exists():
            raise MissingFileError(str(path), None, "required segment file is missing")
    snapshot = log.producer_snapshot_path(candidate.next_base_offset)
    if not snapshot.exists():
        # Kafka requires the producer snapshot at the next segment's base offset (KIP-405).
        raise MissingFileError(str(snapshot), None, "producer snapshot required for upload")
    cut = slice_segment(segment, candidate.slice_from) if candidate.slice_from is not None else None
    size, txn_entries = _checked_files(segment, candidate, cut)
    checkpoint = log.leader_epoch_entries()
    start = cut.position if cut else 0
    epochs = _epochs_in_range(checkpoint, candidate) or _first_epoch(segment, candidate, start)
    facts = SegmentFacts(
        max_timestamp_ms=-1,
        leader_epochs=epochs,
        size_in_bytes=size,
        txn_index_empty=not txn_entries,
        data=LogSegmentData(
            log_segment=segment.log_path,
            offset_index=segment.index_path,
            time_index=segment.time_index_path,
            transaction_index=segment.txn_index_path if segment.has_txn_index() else None,
            producer_snapshot_index=snapshot,
            leader_epoch_index=leader_epoch_checkpoint_bytes(
                entries_before(checkpoint, candidate.next_base_offset)
            ),
            slice_from=candidate.slice_from,
        ),
    )
    return facts, start


def inspect_segment(log: PartitionLog, candidate: CopyCandidate) -> SegmentFacts:
    """``plan_segment`` and the batches' check in one read, here: every fact a FINISHED
    segment ends with (``tierflow verify``, and tests that hold a broker's facts beside
    tierflow's)."""
    facts, start = _planned(log, candidate)
    segment = candidate.segment
    scan = SegmentScan(str(segment.log_path), candidate.start_offset, candidate.end_offset)
    for _chunk in scan.watch(read_chunks(segment.log_path, SCAN_READ, start=start), start):
        pass
    assert scan.result is not None, "set when the chunks end"
    found = scan.result.leader_epochs
    epochs = [EpochEntry(e, o) for e, o in found] if found else facts.leader_epochs
    return replace(facts, max_timestamp_ms=scan.result.max_timestamp_ms, leader_epochs=epochs)


def _first_epoch(segment: LogSegment, candidate: CopyCandidate, position: int) -> list[EpochEntry]:
    """The first leader epoch a batch carries, as of the segment's start: for a checkpoint
    that has no entry in range (headers only, and mostly the first)."""
    from tierflow.kafka.record_batch import iter_batches  # kafka-python, only for this

    for batch in iter_batches(segment.log_path, validate_crc=False, start_position=position):
        if batch.partition_leader_epoch >= 0:
            return [EpochEntry(batch.partition_leader_epoch, candidate.start_offset)]
    raise KafkaFormatError(
        str(segment.log_path), None, "no leader epoch in the batches or the checkpoint"
    )


def _checked_files(
    segment: LogSegment, candidate: CopyCandidate, cut: SegmentSlice | None
) -> tuple[int, list[AbortedTxn]]:
    """How many ``.log`` bytes the upload takes and the aborted transactions it carries, with
    the indexes checked: the segment's own, or its slice's."""
    if cut is not None:
        source = f"{segment.log_path} from offset {cut.base_offset}"
        size = cut.size_in_bytes
        OffsetIndex.from_bytes(cut.offset_index, cut.base_offset, source=source, log_size=size)
        TimeIndex.from_bytes(cut.time_index, cut.base_offset, source=source)
        return size, txn_index_entries(cut.txn_index, source)
    size = segment.size_in_bytes()
    OffsetIndex.check(segment.index_path, segment.base_offset, log_size=size)
    TimeIndex.read(segment.time_index_path, segment.base_offset)
    _say_zero_tail(OffsetIndex, segment.index_path)
    _say_zero_tail(TimeIndex, segment.time_index_path)
    txn_path = segment.txn_index_path if segment.has_txn_index() else None
    return size, read_txn_index(txn_path) if txn_path else []


def _say_zero_tail(kind: type[SparseIndex], path: Path) -> None:
    """One line when a rolled segment's index kept its zero-filled preallocated tail.

    Kafka trims an index when its segment rolls; a broker killed first leaves the zeros. The
    storage managers upload the valid entries only; the local file is the broker's, left alone.
    """
    _, slots = kind.valid_file_bytes(path)
    if slots:
        log.warning(
            "%s: trimmed %d zero-filled preallocated slots from the %s before upload",
            path,
            slots,
            kind.KIND,
        )


def _epochs_in_range(entries: list[EpochEntry], candidate: CopyCandidate) -> list[EpochEntry]:
    """Kafka's epochEntriesInRange, for segments whose batches carry no epoch (magic 0/1).

    A segment's epochs otherwise come from its own batches, in the same pass that checks CRCs.
    """
    start = candidate.start_offset
    inside = [e for e in entries if e.start_offset < candidate.next_base_offset]
    result = [e for e in inside if e.start_offset >= start]
    earlier = [e for e in inside if e.start_offset < start]
    if earlier:
        result.insert(0, EpochEntry(earlier[-1].epoch, start))
    return result
