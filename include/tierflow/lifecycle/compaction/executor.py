"""What a Spark executor runs for the compaction job (spark_apps/compact_segments.py).

In the package, not in the Spark application, because executors unpickle task functions by
importing their module. The job has two stages, as Kafka's cleaner has two passes: every
source segment is scanned on its own (``scan_source``; the latest record per key then meets
its key's other records in Spark's shuffle), and every group is written on its own
(``write_group``) against the offsets that stay. Nothing here imports Airflow or writes state.
"""

from __future__ import annotations

from dataclasses import replace

from tierflow.config import Settings
from tierflow.engine.worker import executor_storage
from tierflow.kafka.txn_index import AbortedTxn
from tierflow.lifecycle.compaction.job import CompactionJob, compact_group
from tierflow.lifecycle.compaction.offset_map import KeptOffsets, SegmentScan, scan_segment
from tierflow.rsm import RemoteSegment
from tierflow.storage.handover import BucketClient

# (job index, the source segment's fields, the aborted transactions a read of it needs)
SourceItem = tuple[int, dict, list[AbortedTxn]]


def scan_source(
    settings: Settings, bucket_client: BucketClient | None, item: SourceItem
) -> tuple[int, str, SegmentScan]:
    """Pass one over one source segment: (job index, segment id, its scan)."""
    index, fields, aborted = item
    source = RemoteSegment(**fields)
    rsm = executor_storage(settings, bucket_client)
    chunks = rsm.iter_log_segment(source)
    return (
        index,
        source.segment_id,
        scan_segment(source.segment_id, chunks, aborted, source.describe()),
    )


def without_map(scan: SegmentScan) -> SegmentScan:
    """A scan's fate flags alone: the map itself goes through the shuffle, not the driver."""
    return replace(scan, latest={})


def write_group(
    settings: Settings,
    bucket_client: BucketClient | None,
    item: tuple[dict, int, dict[str, SegmentScan], list[AbortedTxn]],
    kept: KeptOffsets,
) -> dict:
    """Pass two for one group: its segment written (or found unneeded); the result."""
    raw_job, group_index, scans, aborted = item
    job = CompactionJob.from_dict(raw_job)
    rsm = executor_storage(settings, bucket_client)
    result = compact_group(job, job.groups[group_index], scans, aborted, kept, rsm)
    return result.as_dict()
