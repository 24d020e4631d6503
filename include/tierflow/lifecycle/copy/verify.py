"""Read tiered segments back from remote storage and compare them with the local files.

The demo and ``tierflow verify`` use this to show, not just claim, that every
COPY_SEGMENT_FINISHED segment is byte-identical to what the broker wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.copy.candidates import CopyCandidate
from tierflow.lifecycle.copy.segment_facts import inspect_segment
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import IndexType, RemoteResourceNotFoundError, RemoteStorageManager
from tierflow.segment_refs import remote_segment

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
    local = {s.base_offset: s for s in log_.segments()}
    bases = sorted(local)
    checks = []
    finished = store.segments(
        topic.topic_id, log_.partition, states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
    )
    progress.add_total(len(finished), sum(row.segment_size_bytes for row in finished))
    for row in finished:
        progress.note(f"{topic.name}-{log_.partition} {row.start_offset:020d}.log")
        segment = local.get(row.start_offset)
        later = [b for b in bases if b > row.start_offset]
        if segment is None or not later:
            checks.append(_check(topic, row, None, "local segment no longer on disk"))
        else:
            problem = _first_problem(log_, topic, row, rsm, CopyCandidate(segment, later[0]))
            checks.append(_check(topic, row, problem is None, problem or "byte-identical"))
        progress.advance(1, row.segment_size_bytes)
    return checks


def _first_problem(
    log_: PartitionLog,
    topic: Topic,
    row: RemoteLogSegment,
    rsm: RemoteStorageManager,
    candidate: CopyCandidate,
) -> str | None:
    """The first remote object that differs from its local file, said; None if none does."""
    segment = candidate.segment
    ref = remote_segment(topic, row)
    facts = inspect_segment(log_, candidate)
    pairs: list[tuple[str, Iterable[bytes], Path | bytes]] = [
        ("log", rsm.iter_log_segment(ref), segment.log_path),
        ("offset index", [rsm.fetch_index(ref, IndexType.OFFSET)], segment.index_path),
        ("time index", [rsm.fetch_index(ref, IndexType.TIMESTAMP)], segment.time_index_path),
        (
            "producer snapshot",
            [rsm.fetch_index(ref, IndexType.PRODUCER_SNAPSHOT)],
            facts.data.producer_snapshot_index,
        ),
        (
            "leader-epoch checkpoint",
            [rsm.fetch_index(ref, IndexType.LEADER_EPOCH)],
            facts.data.leader_epoch_index,
        ),
    ]
    if facts.data.transaction_index is not None:
        pairs.append(
            (
                "transaction index",
                [_fetch_optional(rsm, ref, IndexType.TRANSACTION)],
                facts.data.transaction_index,
            )
        )
    for name, remote, expected in pairs:
        position = first_difference(remote, _local_chunks(expected))
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


def _local_chunks(source: Path | bytes) -> Iterator[bytes]:
    if isinstance(source, bytes):
        yield source
        return
    with open(source, "rb") as handle:
        yield from iter(lambda: handle.read(_CHUNK), b"")


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
