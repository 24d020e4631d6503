"""A restore as an operator asks for it (the CLI's flags, the DAG's form): a topic, its
partitions (every one in remote storage by default), a target log dir, where to stop, a new
name. Shared by ``tierflow restore`` and the partition_restore DAG."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tierflow.kafka.uuid import derived_kafka_uuid
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.restore.partition import RestoreReport, restore_partition
from tierflow.restore.plan import RestoredAs, RestoreError, find_topic
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.keys import validate_topic_name


@dataclass(frozen=True)
class RestoreRequest:
    topic: str
    to: Path
    partitions: tuple[int, ...] = ()  # empty: every partition with a finished remote segment
    to_offset: int | None = None
    to_timestamp: int | None = None
    as_topic: str | None = None
    dry_run: bool = False
    actor: str = "tierflow"
    progress: Progress = field(default=NO_PROGRESS, compare=False)


def run_restore(
    store: MetadataStore, rsm: RemoteStorageManager, request: RestoreRequest
) -> list[RestoreReport]:
    """Each partition of the request restored (or planned, on a dry run), in order."""
    partitions = request.partitions or remote_partitions(store, request.topic)
    restored_as = restored_as_of(store, request.topic, request.as_topic)
    return [
        restore_partition(
            store,
            rsm,
            topic=request.topic,
            partition=partition,
            log_dir=request.to,
            to_offset=request.to_offset,
            to_timestamp=request.to_timestamp,
            restored_as=restored_as,
            dry_run=request.dry_run,
            progress=request.progress,
            actor=request.actor,
        )
        for partition in partitions
    ]


def remote_partitions(store: MetadataStore, topic: str) -> list[int]:
    """The topic's partitions with a finished remote segment."""
    topic_id = find_topic(store, topic).topic_id
    finished = store.partitions_with_segments([S.COPY_SEGMENT_FINISHED])
    found = sorted(partition for tid, partition in finished if tid == topic_id)
    if not found:
        raise RestoreError(f"{topic}: no segment in remote storage to restore")
    return found


def remote_bytes(store: MetadataStore, topic: str, partitions: list[int]) -> int:
    topic_id = find_topic(store, topic).topic_id
    rows = (store.segments(topic_id, p, states=[S.COPY_SEGMENT_FINISHED]) for p in partitions)
    return sum(row.segment_size_bytes for found in rows for row in found)


def restored_as_of(store: MetadataStore, topic: str, as_topic: str | None) -> RestoredAs | None:
    """A new name, and an id derived from the topic's and the name's: every partition of the
    copy, and every rerun of its restore, carries the same one."""
    if as_topic is None:
        return None
    validate_topic_name(as_topic)
    return RestoredAs(
        as_topic, derived_kafka_uuid(f"{find_topic(store, topic).topic_id}/{as_topic}")
    )
