"""The Iceberg export's lag for the page and ``tierflow status``: per partition of each topic
exported with tierflow.iceberg.export=true, how far its table is behind the tiered data.

Read from the store (``partitions.iceberg_exported_offset``, which each commit raises), not
from the catalog: the page stays a few indexed queries, and it shows what remote retention
waits on.
"""

from __future__ import annotations

from tierflow.export.status import PartitionLag, export_lag
from tierflow.metadata.models import Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore


def export_lags(
    store: MetadataStore, topics: list[Topic], partition: int | None
) -> list[PartitionLag]:
    """The lag of each exported topic's partitions with tiered data (``partition``: that one)."""
    exported = [t for t in topics if t.iceberg_export]
    if not exported:
        return []
    finished = store.partitions_with_segments([S.COPY_SEGMENT_FINISHED])
    lags = []
    for topic in exported:
        numbers = [p for tid, p in finished if tid == topic.topic_id]
        ends = {p: store.partition(topic.topic_id, p).iceberg_exported_offset for p in numbers}
        lags += [
            lag
            for lag in export_lag(store, topic, ends)
            if partition is None or lag.partition == partition
        ]
    return lags
