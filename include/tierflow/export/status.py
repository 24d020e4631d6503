"""How far each exported topic's table is behind its tiered data: the export lag.

Per partition: the highest offset in remote storage, the highest offset committed to the
table, and the bytes of the finished segments holding offsets not exported yet. Remote
retention waits on this lag (``tierflow.iceberg.retention.wait.max.ms`` bounds the wait).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tierflow.metadata.models import Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    remote_end_offset: int  # the last offset in remote storage
    exported_end_offset: int  # the last offset committed to the table; -1: none
    lag_offsets: int
    lag_bytes: int

    def as_dict(self) -> dict:
        return asdict(self)


def export_lag(store: MetadataStore, topic: Topic, ends: dict[int, int]) -> list[PartitionLag]:
    """Each partition with tiered data, against the table's committed ends."""
    lags = []
    finished = store.partitions_with_segments([S.COPY_SEGMENT_FINISHED])
    for partition in sorted(p for tid, p in finished if tid == topic.topic_id):
        rows = store.segments(topic.topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
        remote_end = max(row.end_offset for row in rows)
        exported = ends.get(partition, -1)
        behind = [row for row in rows if row.end_offset > exported]
        first = min((row.start_offset for row in behind), default=remote_end + 1)
        lags.append(
            PartitionLag(
                topic.name,
                partition,
                remote_end,
                exported,
                remote_end - max(exported + 1, first) + 1 if behind else 0,
                sum(row.segment_size_bytes for row in behind),
            )
        )
    return lags
