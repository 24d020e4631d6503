"""Views of a tiered topic used by the disablement tests at library and DAG level."""

from __future__ import annotations

from tests.support.tiered import NOW_MS, Tiered
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

LIVE = (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)


def clock() -> int:
    return NOW_MS


def live(t: Tiered, topic: str, partition: int) -> list:
    return t.store.segments(t.store.topic(topic).topic_id, partition, states=LIVE)


def copy(t: Tiered, log_: PartitionLog) -> list[tuple[int, int]]:
    report = copy_partition(log_, t.store, t.rsm, owner="copy", clock=clock)
    return [(c.start_offset, c.end_offset) for c in report.copied]


def copy_first(t: Tiered, log_: PartitionLog, count: int) -> None:
    """Copy only the first ``count`` eligible segments, as a copy interrupted by the disable."""
    plan = prepare_copy(
        log_, t.store, rsm=t.rsm, owner=CopyOwner("copy"), clock=clock, max_segments=count
    )
    results = {job.segment_id: rewrite_segment(job, t.rsm) for job in plan.jobs}
    finalize_copy(plan, results, t.store, t.rsm, owner="copy", clock=clock)


def bucket_files(t: Tiered) -> set[str]:
    return {p.relative_to(t.bucket()).as_posix() for p in t.bucket().rglob("*") if p.is_file()}


def live_keys(t: Tiered) -> set[str]:
    keys: set[str] = set()
    for log_ in t.logs():
        for row in live(t, log_.topic, log_.partition):
            keys |= {o.key for o in t.store.segment_objects(row.segment_id)}
    return keys
