"""A restore run as an operator asks for it (``RestoreRequest``, asked.py): every partition
prepared, their segments written, each moved into place. Shared by ``tierflow restore`` and the
partition_restore DAG."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tierflow.kafka.uuid import derived_kafka_uuid
from tierflow.lifecycle.progress import Progress
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.restore.asked import RestoreRequest
from tierflow.restore.partition import (
    PreparedRestore,
    RestoreReport,
    prepare_partition,
    refuse_locked,
)
from tierflow.restore.place import finish_pending_swaps, place_partitions
from tierflow.restore.plan import RestoredAs, RestoreError, find_topic
from tierflow.restore.segment_job import RestoreSegmentJob, restore_segments_here
from tierflow.restore.staging import discard_staging
from tierflow.restore.stray import ClusterView, check_assigned, cluster_topic_id, cluster_view
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.keys import validate_topic_name

# Writes a batch of segments (here or on Spark), advancing the progress; one result each.
SegmentWriter = Callable[[Sequence[RestoreSegmentJob], Progress], list[dict]]


def run_restore(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    request: RestoreRequest,
    writer: SegmentWriter | None = None,
) -> list[RestoreReport]:
    """Every partition of the request planned and checked first, then all their missing
    segments written into their staging directories in one batch (by ``writer``: Spark for a
    heavy restore, this process by default), then each partition moved into place and
    recorded, or, where a segment failed, left as it was. A dry run stops after the plans."""
    prepared = prepare_restore(store, rsm, request)
    if request.dry_run:
        return [p.report for p in prepared]
    progress = request.progress
    progress.advance(sum(sum(p.done) for p in prepared), sum(p.restored_bytes for p in prepared))
    jobs = [job for p in prepared for job in p.jobs()]
    results: list[dict] = []
    if jobs:
        write = writer or (lambda batch, bar: restore_segments_here(batch, rsm, bar))
        try:
            results = write(jobs, progress)
        except Exception:  # the batch failed as a whole (a Spark job): the log dir as it was
            for p in prepared:
                discard_staging(p.plan)
            raise
    return place_partitions(store, prepared, results, request.actor)


def restore_partition(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    topic: str,
    partition: int,
    log_dir: Path,
    **options: Any,
) -> RestoreReport:
    """One partition restored in this process: ``options`` are RestoreRequest's fields."""
    request = RestoreRequest(topic, log_dir, (partition,), **options)
    return run_restore(store, rsm, request)[0]


def prepare_restore(
    store: MetadataStore, rsm: RemoteStorageManager, request: RestoreRequest
) -> list[PreparedRestore]:
    """Each partition of the request planned, checked against its target and cut; first,
    unless it is a dry run, every swap a killed restore began in the log dir is finished."""
    partitions = request.partitions or remote_partitions(store, request.topic)
    name = request.as_topic or request.topic
    view = cluster_view(request.to, [name], request.bootstrap)
    restored_as = restored_as_of(store, request.topic, request.as_topic, view)
    for partition in partitions if view is not None else ():
        check_assigned(view, name, partition)
    swapped: set[str] = set()
    if not request.dry_run:
        refuse_locked(request.to)
        swapped = finish_pending_swaps(store, request.to)
    return [
        prepare_partition(store, rsm, request, partition, restored_as, swapped=swapped)
        for partition in partitions
    ]


def remote_partitions(store: MetadataStore, topic: str) -> list[int]:
    """The topic's partitions with a finished remote segment."""
    found = store.finished_partitions(find_topic(store, topic).topic_id)
    if not found:
        raise RestoreError(f"{topic}: no segment in remote storage to restore")
    return found


def remote_bytes(store: MetadataStore, topic: str, partitions: list[int]) -> int:
    topic_id = find_topic(store, topic).topic_id
    rows = (store.segments(topic_id, p, states=[S.COPY_SEGMENT_FINISHED]) for p in partitions)
    return sum(row.segment_size_bytes for found in rows for row in found)


def restored_as_of(
    store: MetadataStore, topic: str, as_topic: str | None, view: ClusterView | None = None
) -> RestoredAs | None:
    """The name and id the restored partitions carry; None: the topic's own.

    Into a KRaft broker's log dir, the id is the cluster's for the name (stray.py). Elsewhere a
    copy gets an id derived from the topic's and the name's: every partition of the copy, and
    every rerun of its restore, carries the same one."""
    tiered_id = find_topic(store, topic).topic_id
    if as_topic is None:
        if view is not None:
            _same_topic_in_cluster(view, topic, tiered_id)
        return None
    validate_topic_name(as_topic)
    derived = derived_kafka_uuid(f"{tiered_id}/{as_topic}")
    if view is None:
        return RestoredAs(as_topic, derived)
    create = f"create it first (kafka-topics.sh --create --topic {as_topic})"
    return RestoredAs(as_topic, cluster_topic_id(view, as_topic, create) or derived)


def _same_topic_in_cluster(view: ClusterView, topic: str, tiered_id: str) -> None:
    again = f"create it again and restore it --as-topic {topic}"
    current = cluster_topic_id(view, topic, again)
    if current is not None and current != tiered_id:
        raise RestoreError(
            f"{topic}: the cluster has it under topic id {current}, not {tiered_id} whose data "
            "was tiered (deleted and created again), so the broker would delete the restored "
            f"partitions as stray; restore it --as-topic {topic} into the topic it has now"
        )
