"""A compacted changelog whose log cleaner merges copied segments with uncopied ones.

Shared by the compacted-copy tests: library, crash and DAG.
"""

from __future__ import annotations

from tests.support.log_cleaner import clean_partition
from tests.support.tiered import Tiered
from tierflow.demo.topics import TopicSpec
from tierflow.kafka.records import CODEC_NONE
from tierflow.lifecycle.copy.plan import PartitionCopyReport
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

CHANGELOG = TopicSpec(name="changelog", partitions=1, segments=6, codecs=(CODEC_NONE,))


def bases(t: Tiered) -> list[int]:
    return [s.base_offset for s in t.log("changelog", 0).segments()]


def copy(t: Tiered) -> PartitionCopyReport:
    return copy_partition(t.log("changelog", 0), t.store, t.rsm, owner="test")


def finished_changelog_ranges(t: Tiered) -> list[tuple[int, int]]:
    topic = t.store.topic("changelog")
    rows = t.store.segments(topic.topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    return [(r.start_offset, r.end_offset) for r in rows]


def merge_across_the_boundary(t: Tiered) -> list[int]:
    """Segments 0-3 cleaned and copied; then a pass merges 2-4 (copied 2 and 3 with uncopied
    4) and cleans 5. The segments' base offsets as generated."""
    first, path = bases(t), t.log("changelog", 0).path
    clean_partition(path, first_uncleanable=first[4])
    copy(t)
    clean_partition(path, first_uncleanable=first[6], merge=[[first[2], first[3], first[4]]])
    return first
