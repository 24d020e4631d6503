"""Everything the copy needs to know about a local segment, checked before any state is written.

Reading the whole segment here (headers only, CRC checked) means a corrupt or truncated
segment fails with the file and byte position named, before COPY_SEGMENT_STARTED exists, so
bad input leaves no metadata and no objects behind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tierflow.copy_quota import throttle
from tierflow.kafka.errors import KafkaFormatError, MissingFileError
from tierflow.kafka.index_file import SparseIndex
from tierflow.kafka.leader_epoch import EpochEntry, entries_before, leader_epoch_checkpoint_bytes
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.record_batch import iter_batches
from tierflow.kafka.segment import LogSegment
from tierflow.kafka.segment_slice import SegmentSlice, slice_segment
from tierflow.kafka.time_index import TimeIndex
from tierflow.kafka.txn_index import AbortedTxn, read_txn_index, txn_index_entries
from tierflow.lifecycle.copy.candidates import CopyCandidate
from tierflow.lifecycle.copy.rewrite import SEGMENT_GONE
from tierflow.lifecycle.processes import largest_first, workers_for
from tierflow.rsm import LogSegmentData

log = logging.getLogger(__name__)


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


def inspect_segment(log: PartitionLog, candidate: CopyCandidate) -> SegmentFacts:
    segment = candidate.segment
    for path in (segment.log_path, segment.index_path, segment.time_index_path):
        if not path.exists():
            raise MissingFileError(str(path), None, "required segment file is missing")
    snapshot = log.producer_snapshot_path(candidate.next_base_offset)
    if not snapshot.exists():
        # Kafka requires the producer snapshot at the next segment's base offset (KIP-405).
        raise MissingFileError(str(snapshot), None, "producer snapshot required for upload")
    cut = slice_segment(segment, candidate.slice_from) if candidate.slice_from is not None else None
    max_timestamp, batch_epochs = _scan_batches(segment, candidate, cut.position if cut else 0)
    size, txn_entries = _checked_files(segment, candidate, cut)
    checkpoint = log.leader_epoch_entries()
    epochs = batch_epochs or _epochs_in_range(checkpoint, candidate)
    if not epochs:
        raise KafkaFormatError(
            str(segment.log_path), None, "no leader epoch in the batches or the checkpoint"
        )
    return SegmentFacts(
        max_timestamp_ms=max_timestamp,
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
    OffsetIndex.read(segment.index_path, segment.base_offset, log_size=size)
    TimeIndex.read(segment.time_index_path, segment.base_offset)
    _say_zero_tail(OffsetIndex, segment.index_path)
    _say_zero_tail(TimeIndex, segment.time_index_path)
    txn_path = segment.txn_index_path if segment.has_txn_index() else None
    return size, read_txn_index(txn_path) if txn_path else []


def _scan_batches(
    segment: LogSegment, candidate: CopyCandidate, position: int
) -> tuple[int, list[EpochEntry]]:
    """The uploaded batches' largest timestamp and leader epochs, every CRC checked; a batch
    past the segment's end is refused."""
    max_timestamp, last_offset = -1, None
    batch_epochs: list[EpochEntry] = []
    for batch in iter_batches(segment.log_path, validate_crc=True, start_position=position):
        throttle(segment.log_path, batch.size_in_bytes)  # read from the broker's disk
        max_timestamp = max(max_timestamp, batch.max_timestamp)
        last_offset = batch.last_offset
        epoch = batch.partition_leader_epoch
        if epoch >= 0 and (not batch_epochs or epoch > batch_epochs[-1].epoch):
            batch_epochs.append(EpochEntry(epoch, batch.base_offset))
    if last_offset is not None and last_offset > candidate.end_offset:
        raise KafkaFormatError(
            str(segment.log_path),
            None,
            f"last offset {last_offset} is beyond the next segment's base offset "
            f"{candidate.next_base_offset}",
        )
    if batch_epochs and batch_epochs[0].start_offset > candidate.start_offset:
        # Compaction removed the segment's first offsets; its first epoch still starts at the
        # segment's start, as Kafka's epochEntriesInRange clamps it.
        batch_epochs[0] = EpochEntry(batch_epochs[0].epoch, candidate.start_offset)
    return max_timestamp, batch_epochs


def checked_segments(
    log: PartitionLog, candidates: Sequence[CopyCandidate], workers: int | None = None
) -> Iterator[tuple[CopyCandidate, SegmentFacts | KafkaFormatError]]:
    """Each candidate, in offset order, with its facts or the reason it is refused.

    Many or large candidates are checked on every core at once (tierflow.lifecycle.processes);
    the caller still records them in order and stops at the first refused one, so the end
    state is the one-by-one check's. A few small ones are checked here, one at a time.
    """
    total = sum(c.segment.size_in_bytes() for c in candidates)
    count = workers_for(total, len(candidates), workers)
    if count <= 1:
        for candidate in candidates:
            yield candidate, _checked(log, candidate)
        return
    check = partial(_checked, log)
    done = largest_first(check, candidates, size=_candidate_size, workers=count)
    found = {candidate.base_offset: future.result() for candidate, future in done}
    for candidate in candidates:
        yield candidate, found[candidate.base_offset]


def _checked(log: PartitionLog, candidate: CopyCandidate) -> SegmentFacts | KafkaFormatError:
    try:
        return inspect_segment(log, candidate)
    except KafkaFormatError as exc:
        return exc
    except FileNotFoundError as exc:  # listed a moment ago, deleted by the broker since
        return KafkaFormatError(exc.filename or str(candidate.segment.log_path), None, SEGMENT_GONE)


def _candidate_size(candidate: CopyCandidate) -> int:
    return candidate.segment.size_in_bytes()


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
