"""How far each exported topic's table is behind its tiered data: the export lag.

Per partition: the highest offset in remote storage, the highest offset committed to the
table, and the bytes of the finished segments holding offsets not exported yet. Read from the
store (``partitions.iceberg_exported_offset``, which each commit raises), not from the catalog:
it costs a few indexed queries, opens no catalog, and is exactly what remote retention waits on
(``tierflow.iceberg.retention.wait.max.ms`` bounds the wait).
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


def export_lags(
    store: MetadataStore, topics: list[Topic], partition: int | None = None
) -> list[PartitionLag]:
    """Each partition (or only ``partition``) of the topics with tiered data, against the
    last offset committed to its table."""
    return [
        lag
        for topic in topics
        for lag in export_lag(store, topic)
        if partition is None or lag.partition == partition
    ]


def export_lag(store: MetadataStore, topic: Topic) -> list[PartitionLag]:
    """Each partition of the topic with tiered data, against its ``iceberg_exported_offset``."""
    exported = {p.partition: p.iceberg_exported_offset for p in store.partitions(topic.topic_id)}
    lags = []
    for partition in store.finished_partitions(topic.topic_id):
        rows = store.segments(topic.topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
        remote_end = max(row.end_offset for row in rows)
        end = exported.get(partition, -1)
        behind = [row for row in rows if row.end_offset > end]
        first = min((row.start_offset for row in behind), default=remote_end + 1)
        lags.append(
            PartitionLag(
                topic.name,
                partition,
                remote_end,
                end,
                remote_end - max(end + 1, first) + 1 if behind else 0,
                sum(row.segment_size_bytes for row in behind),
            )
        )
    return lags
