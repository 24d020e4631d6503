"""Read tiered segments back from remote storage and compare them with the local files.

The demo and ``tierflow verify`` use this to show, not just claim, that every
COPY_SEGMENT_FINISHED segment is byte-identical to what the broker wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafka.record.memory_records import MemoryRecords

from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.record_batch import iter_batch_frames
from tierflow.kafka.segment import LogSegment
from tierflow.lifecycle.copy.candidates import CopyCandidate
from tierflow.lifecycle.copy.segment_facts import inspect_segment
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import IndexType, RemoteResourceNotFoundError, RemoteStorageManager
from tierflow.segment_refs import remote_segment
from tierflow.transform.chunking import read_chunks
from tierflow.transform.segment_files import segment_file_stream

_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class SegmentCheck:
    topic: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    size_in_bytes: int
    identical: bool | None  # None: the local copy is gone, nothing to compare with
    detail: str


def verify_partition(
    log_: PartitionLog,
    topic: Topic,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    progress: Progress = NO_PROGRESS,
) -> list[SegmentCheck]:
    """Compare each COPY_SEGMENT_FINISHED segment of the partition with its local files.

    ``progress`` hears of the partition's finished segments and their bytes, then of each one
    checked (compared, or found gone from the disk).
    """
    segments = log_.segments()
    checks = []
    finished = store.segments(
        topic.topic_id, log_.partition, states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
    )
    progress.add_total(len(finished), sum(row.segment_size_bytes for row in finished))
    for row in finished:
        progress.note(f"{topic.name}-{log_.partition} {row.start_offset:020d}.log")
        candidate = _local_candidate(segments, row)
        if isinstance(candidate, str):
            checks.append(_check(topic, row, None, candidate))
        else:
            checks.append(_compared(log_, topic, row, rsm, candidate))
        progress.advance(1, row.segment_size_bytes)
    return checks


def _local_candidate(segments: list[LogSegment], row: RemoteLogSegment) -> CopyCandidate | str:
    """The local segment (or, for a slice, the segment's tail) the row was copied from; why
    there is none to compare with."""
    holding = [s for s in segments if s.base_offset <= row.start_offset]
    later = [s.base_offset for s in segments if s.base_offset > row.start_offset]
    if not holding or not later:
        return "local segment no longer on disk"
    segment = holding[-1]
    if later[0] != row.end_offset + 1:
        return "the log cleaner has merged the local segment with others since the copy"
    start = row.start_offset
    return CopyCandidate(segment, later[0], None if start == segment.base_offset else start)


def _compared(
    log_: PartitionLog,
    topic: Topic,
    row: RemoteLogSegment,
    rsm: RemoteStorageManager,
    candidate: CopyCandidate,
) -> SegmentCheck:
    """Byte-identical, or different; a compacted topic's local segment cleaned again since the
    copy differs too, and is told apart by every record it kept being in the remote copy."""
    problem = _first_problem(log_, topic, row, rsm, candidate)
    if problem is None:
        return _check(topic, row, True, "byte-identical")
    if topic.config.compacted and _kept_remotely(rsm, topic, row, candidate):
        detail = "the log cleaner has cleaned the local segment again since the copy"
        return _check(topic, row, None, detail + "; the remote copy holds every record it kept")
    return _check(topic, row, False, problem)


def _kept_remotely(
    rsm: RemoteStorageManager, topic: Topic, row: RemoteLogSegment, candidate: CopyCandidate
) -> bool:
    """Whether each local record is in the remote segment, at its offset, identical (both
    streams ascend, so this walks them side by side)."""
    ref = remote_segment(topic, row)
    remote = _records(iter_batch_frames(rsm.iter_log_segment(ref), source=ref.describe()))
    path = candidate.segment.log_path
    local = _records(iter_batch_frames(read_chunks(path, _CHUNK), source=str(path)))
    found = next(remote, None)
    for record in local:
        if record[0] < candidate.start_offset:
            continue
        while found is not None and found[0] < record[0]:
            found = next(remote, None)
        if found != record:
            return False
    return True


def _records(frames: Iterator[tuple[int, bytes]]) -> Iterator[tuple]:
    """(offset, key, value, timestamp, headers) of every record of the batches."""
    for _, data in frames:
        batch = MemoryRecords(data).next_batch()
        for r in batch or ():
            yield (r.offset, r.key, r.value, r.timestamp, tuple(getattr(r, "headers", ())))


def _first_problem(
    log_: PartitionLog,
    topic: Topic,
    row: RemoteLogSegment,
    rsm: RemoteStorageManager,
    candidate: CopyCandidate,
) -> str | None:
    """The first remote object that differs from what the copy reads locally (the stream an
    upload of the segment, or its slice, sends), said; None if none does."""
    ref = remote_segment(topic, row)
    stream = segment_file_stream(inspect_segment(log_, candidate).data, _CHUNK)
    log_problem = first_difference(rsm.iter_log_segment(ref), stream.log_chunks)
    if log_problem is not None:
        return f"log differs from the local file at byte {log_problem}"
    files = stream.files()
    pairs: list[tuple[str, bytes, bytes]] = [
        ("offset index", rsm.fetch_index(ref, IndexType.OFFSET), files.offset_index),
        ("time index", rsm.fetch_index(ref, IndexType.TIMESTAMP), files.time_index),
        (
            "producer snapshot",
            rsm.fetch_index(ref, IndexType.PRODUCER_SNAPSHOT),
            files.producer_snapshot_index,
        ),
        (
            "leader-epoch checkpoint",
            rsm.fetch_index(ref, IndexType.LEADER_EPOCH),
            files.leader_epoch_index,
        ),
    ]
    if files.transaction_index is not None:
        remote = _fetch_optional(rsm, ref, IndexType.TRANSACTION)
        pairs.append(("transaction index", remote, files.transaction_index))
    for name, remote, expected in pairs:
        position = first_difference([remote], [expected])
        if position is not None:
            return f"{name} differs from the local file at byte {position}"
    return None


def _fetch_optional(rsm: RemoteStorageManager, ref, index_type: IndexType) -> bytes:
    try:
        return rsm.fetch_index(ref, index_type)
    except RemoteResourceNotFoundError:
        return b""


def _check(topic: Topic, row, identical: bool | None, detail: str) -> SegmentCheck:
    return SegmentCheck(
        topic.name,
        row.partition,
        row.segment_id,
        row.start_offset,
        row.end_offset,
        row.segment_size_bytes,
        identical,
        detail,
    )


def first_difference(left: Iterable[bytes], right: Iterable[bytes]) -> int | None:
    """Position of the first differing byte of two chunk streams, or None if equal."""
    left_buf = right_buf = b""
    position = 0
    left_it, right_it = iter(left), iter(right)
    left_done = right_done = False
    while True:
        while len(left_buf) < _CHUNK and not left_done:
            chunk = next(left_it, None)
            left_done = chunk is None
            left_buf += chunk or b""
        while len(right_buf) < _CHUNK and not right_done:
            chunk = next(right_it, None)
            right_done = chunk is None
            right_buf += chunk or b""
        n = min(len(left_buf), len(right_buf))
        if left_buf[:n] != right_buf[:n]:
            return position + next(i for i in range(n) if left_buf[i] != right_buf[i])
        if n == 0:
            return None if len(left_buf) == len(right_buf) else position
        left_buf, right_buf, position = left_buf[n:], right_buf[n:], position + n
