"""A generated changelog tiered uncleaned, and what its remote compaction must leave.

Shared by the remote-compaction tests: library, crash, DAG and CLI.
"""

from __future__ import annotations

from tests.support.log_cleaner import mark_cleaned
from tests.support.remote_view import RemoteView
from tests.support.tiered import NOW_MS, Tiered
from tierflow.demo.topics import TopicSpec
from tierflow.kafka.records import CODEC_NONE, CODEC_ZSTD
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

DAY_MS = 86_400_000
CHANGELOG = TopicSpec(
    name="changelog", partitions=1, segments=6, codecs=(CODEC_NONE, CODEC_ZSTD), transactional=True
)


def tier_uncleaned(t: Tiered, local_start: int | None = None) -> list[int]:
    """Copy the changelog's rolled segments as the broker's cleaner left them (a pass that
    removed nothing), then move the local log start to ``local_start`` (by default past them)
    as local retention would. The segments' base offsets."""
    log_ = t.log("changelog", 0)
    bases = [s.base_offset for s in log_.segments()]
    mark_cleaned(log_.path, bases[-1])
    copy_partition(log_, t.store, t.rsm, owner="test")
    topic_id = t.store.topic("changelog").topic_id
    end = bases[-1] if local_start is None else local_start
    t.store.advance_local_log_start_offset(topic_id, 0, end, actor="test", now_ms=NOW_MS)
    return bases


def finished_changelog_rows(t: Tiered) -> list:
    topic_id = t.store.topic("changelog").topic_id
    return t.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])


def cleaned_end(t: Tiered) -> int:
    """Where the compacted range ended (a transaction open at the tiered log's end stops it)."""
    return t.store.partition(t.store.topic("changelog").topic_id, 0).remote_cleaned_offset


def expected_after(before: RemoteView, horizon_ms: int, end: int) -> dict:
    """Each key's latest record, but a tombstone in the range older than the horizon goes."""
    latest = before.latest()
    return {
        k: r
        for k, r in latest.items()
        if not (r.value is None and r.timestamp < horizon_ms and r.offset <= end)
    }
