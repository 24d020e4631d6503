"""Where a partition is built before it is moved into place, and whether it is there already.

Every segment, index, snapshot and partition file of a restore goes into the partition's
staging directory (``restore.swap`` names it); the target is not touched until the whole
partition is there. A restore killed while building keeps its staging directory, and the rerun
writes only the segments missing from it; a restore that fails removes it, leaving the log dir
as it was.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from tierflow.kafka.leader_epoch import LEADER_EPOCH_CHECKPOINT, leader_epoch_checkpoint_bytes
from tierflow.kafka.partition_metadata import PARTITION_METADATA, partition_metadata_bytes
from tierflow.restore.plan import RestorePlan
from tierflow.restore.segment_files import is_restored, segment_file_names
from tierflow.restore.swap import staging_name

PARTITION_FILES = (LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA)


def staging_dir(plan: RestorePlan) -> Path:
    return plan.log_dir / staging_name(plan.name)


def restore_file_names(plan: RestorePlan) -> set[str]:
    """Every file the plan's restore may write in the partition directory (the cut segment
    has no producer snapshot)."""
    names = set(PARTITION_FILES)
    for segment in plan.segments:
        names.update(segment_file_names(segment))
    if plan.cut is not None:
        names.discard(segment_file_names(plan.segments[-1])[-1])
    return names


def prune_staging(plan: RestorePlan) -> None:
    """What a killed run of another restore (another cut, fewer segments) left in the staging
    directory and this one would not write."""
    staging = staging_dir(plan)
    if not staging.is_dir():
        return
    keep = restore_file_names(plan)
    for path in staging.iterdir():
        if path.name not in keep:
            path.unlink()


def discard_staging(plan: RestorePlan) -> None:
    shutil.rmtree(staging_dir(plan), ignore_errors=True)


def in_place(plan: RestorePlan) -> bool:
    """The target holds exactly what this restore would write, with its checkpoint lines: a
    rerun of a finished restore, which writes and records nothing."""
    directory = plan.directory
    if not directory.is_dir():
        return False
    names = {path.name for path in directory.iterdir()}
    if not names <= restore_file_names(plan) or not set(PARTITION_FILES) <= names:
        return False
    sizes = zip(plan.segments, plan.sizes(), strict=True)
    if not all(is_restored(directory, segment, size) for segment, size in sizes):
        return False
    files = {
        PARTITION_METADATA: partition_metadata_bytes(plan.restored_as.topic_id),
        LEADER_EPOCH_CHECKPOINT: leader_epoch_checkpoint_bytes(plan.leader_epochs()),
    }
    if any((directory / name).read_bytes() != data for name, data in files.items()):
        return False
    key = (plan.restored_as.name, plan.partition)
    for name, offset in checkpoint_lines(plan):
        path = plan.log_dir / name
        if not path.is_file() or read_offset_checkpoint(path).get(key) != offset:
            return False
    return True


def checkpoint_lines(plan: RestorePlan) -> tuple[tuple[str, int], ...]:
    """The log dir's checkpoint files and the partition's offset in each."""
    return restored_checkpoints(plan.start_offset, plan.next_offset)


def restored_checkpoints(start_offset: int, next_offset: int) -> tuple[tuple[str, int], ...]:
    """Where the broker starts the restored log, that it need not recover it, and its high
    watermark: every offset restored was committed when it was tiered (a copy never goes past
    the last stable offset). Without that line a broker that leads the partition alone (a
    replacement for a dead broker, an RF 1 topic) loads it with a high watermark of 0 and
    serves no record of it until the next produce."""
    return (
        (LOG_START_OFFSET_CHECKPOINT, start_offset),
        (RECOVERY_POINT_OFFSET_CHECKPOINT, next_offset),
        (REPLICATION_OFFSET_CHECKPOINT, next_offset),
    )
