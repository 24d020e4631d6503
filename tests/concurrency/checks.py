"""What must hold after overlapping runs, read from the store, its history, the bucket and disk.

The chaos harness's five invariants (tests/chaos/invariants.py) are reused as they are; the
checks here add what only concurrency can break: a transition recorded twice, an offset range
copied under two segment ids, a file or an object deleted by both runs.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from tests.chaos.invariants import (
    CheckResult,
    PartitionKey,
    PristinePartition,
    check_invariants,
    check_readable,
)
from tests.support.tiered import Tiered, eligible
from tierflow.metadata.events import EventEntity
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore


def assert_invariants(t: Tiered, pristine: dict[PartitionKey, PristinePartition]) -> int:
    """The five chaos invariants; the number of records read back."""
    result = check_invariants(t.settings, pristine)
    assert [f"{v.invariant}: {v.detail}" for v in result.violations] == []
    assert result.records_verified > 0
    return result.records_verified


def assert_remote_readable(t: Tiered, pristine: dict[PartitionKey, PristinePartition]) -> int:
    """Every offset of every finished remote segment reads back byte-identical from the bucket
    alone (no local file is consulted, unlike the chaos check when the files are still there)."""
    copied: dict[PartitionKey, PristinePartition] = {}
    for (name, number), part in pristine.items():
        topic_id = t.store.topic(name).topic_id
        rows = t.store.segments(topic_id, number, states=[S.COPY_SEGMENT_FINISHED])
        if rows:
            end = max(r.end_offset for r in rows) + 1
            copied[(name, number)] = PristinePartition(end, part.segment_files, part.batches)
    result = CheckResult()
    check_readable(t.store, t.rsm, {}, copied, result)
    assert [v.detail for v in result.violations] == []
    assert result.records_verified > 0
    return result.records_verified


def assert_copied_once(t: Tiered) -> None:
    """Each eligible segment is COPY_SEGMENT_FINISHED once, and its offsets were claimed by
    exactly one COPY_SEGMENT_STARTED: one segment id per (topic, partition, base offset)."""
    finished, expected = {}, {}
    for log_ in t.logs():
        topic_id = t.store.topic(log_.topic).topic_id
        rows = t.store.segments(topic_id, log_.partition, states=[S.COPY_SEGMENT_FINISHED])
        finished[log_.key] = [(r.start_offset, r.end_offset) for r in rows]
        expected[log_.key] = eligible(log_)
    assert finished == expected
    claims = started_per_offset(t.store)
    assert {key: ids for key, ids in claims.items() if len(ids) != 1} == {}


def started_per_offset(store: MetadataStore) -> dict[tuple[str, int, int], list[str]]:
    """Segment ids recorded COPY_SEGMENT_STARTED, by (topic id, partition, start offset)."""
    starts = {
        row.segment_id: row.start_offset
        for topic in store.topics()
        for partition in store.partitions(topic.topic_id)
        for row in store.segments(topic.topic_id, partition.partition)
    }
    claims: dict[tuple[str, int, int], list[str]] = defaultdict(list)
    for event in store.events(entity=EventEntity.SEGMENT):
        if event.to_state == S.COPY_SEGMENT_STARTED and event.segment_id:
            key = (event.topic_id, event.partition or 0, starts[event.segment_id])
            claims[key].append(event.segment_id)
    return dict(claims)


def assert_each_transition_once(store: MetadataStore) -> None:
    """No segment entered any state twice (two runs both recording the same transition)."""
    seen = Counter(
        (event.segment_id, event.to_state)
        for event in store.events(entity=EventEntity.SEGMENT)
        if event.segment_id
    )
    assert {key: n for key, n in seen.items() if n > 1} == {}


def bucket_files(t: Tiered) -> set[str]:
    """Every file under the bucket directory, temporary files of unfinished writes too."""
    root = t.bucket()
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def assert_bucket_is_exactly_the_finished_objects(t: Tiered) -> None:
    recorded: set[str] = set()
    for topic in t.store.topics():
        for partition in t.store.partitions(topic.topic_id):
            for row in t.store.segments(
                topic.topic_id, partition.partition, states=[S.COPY_SEGMENT_FINISHED]
            ):
                recorded |= {o.key for o in t.store.segment_objects(row.segment_id)}
    assert bucket_files(t) == recorded


def failures(outcome: dict) -> dict[str, str]:
    """The run's failed tasks: name -> "ExceptionType: message" (worker.py)."""
    return dict(outcome["failed"])
