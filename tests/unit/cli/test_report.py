"""The per-partition figures of copy and verify (``tierflow.cli.report``) on segments a broker
wrote: mirrored from ``__remote_log_metadata``, they have no object rows, so what they take in
the bucket is unknown (None, ``-`` in the table), never 0 bytes stored."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from tests.support.tiered import Tiered, build_tiered
from tierflow.cli.report import partition_figures, partition_table
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.remote_log_metadata.records import (
    SegmentMetadata,
    SegmentUpdate,
    TopicIdPartition,
)
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.remote_log_metadata.follow import follow_topic, mirror
from tierflow.metadata.states import RemoteLogSegmentState as S

NOW = 1_700_000_000_000
SEGMENT = "CAAAAAAAAAAAAAAAAAAAAA"
SIZE = 4096


def _follow_one_segment(t: Tiered, log_: PartitionLog) -> None:
    """``log_``'s topic followed, and one finished segment of the broker's mirrored into it."""
    follow_topic(t.store, log_.topic, actor="test", now_ms=NOW)
    topic = t.store.topic(log_.topic)
    where = TopicIdPartition(log_.topic, topic.topic_id, log_.partition)
    started = SegmentMetadata(where, SEGMENT, 0, 99, 1, NOW, NOW + 1, ((0, 0),), SIZE, 0)
    finished = SegmentUpdate(where, SEGMENT, 1, NOW + 2, S.COPY_SEGMENT_FINISHED.id)
    followed = {topic.topic_id: topic}
    assert [mirror(t.store, followed, r) for r in (started, finished)] == ["mirrored"] * 2


def test_a_brokers_segments_leave_the_stored_size_unknown(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    brokers, ours = t.logs()[0], next(g for g in t.logs() if g.topic != t.logs()[0].topic)
    _follow_one_segment(t, brokers)
    copy_partition(ours, t.store, t.rsm, owner="test")

    theirs = partition_figures(t.store, brokers)
    assert (theirs.remote_segments, theirs.remote_bytes) == (1, SIZE)
    assert theirs.stored_bytes is None and theirs.as_dict()["stored_bytes"] is None
    mine = partition_figures(t.store, ours)
    topic_id = t.store.topic(ours.topic).topic_id
    objects = [
        o.size
        for row in t.store.segments(topic_id, ours.partition)
        for o in t.store.segment_objects(row.segment_id)
    ]
    assert mine.remote_segments > 0 and mine.stored_bytes == sum(objects) > 0

    console = Console(width=200, record=True)
    console.print(partition_table([theirs, mine]))
    row = next(line for line in console.export_text().splitlines() if brokers.topic in line)
    assert " - " in row and "0 B" not in row
