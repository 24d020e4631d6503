"""The per-partition figures that copy, verify and the demo report, and their table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from tierflow.kafka.log_dir import PartitionLog
from tierflow.metadata.models import TIERFLOW_COPIER, RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.units import compression_ratio, human_bytes

if TYPE_CHECKING:  # verify's record comparison loads kafka-python, which copy needs none of
    from tierflow.lifecycle.copy.verify import SegmentCheck

_SHORT = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: "copy-started",
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: "finished",
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: "delete-started",
    RemoteLogSegmentState.DELETE_SEGMENT_FINISHED: "deleted",
}


@dataclass(frozen=True)
class PartitionFigures:
    """One partition's local and remote figures, exact: the table rounds them, --json not."""

    topic: str
    partition: int
    local_segments: int
    local_bytes: int
    remote_segments: int
    remote_bytes: int
    # Every object of the finished segments: chunks, indexes, manifests. None when a broker
    # wrote one of them (a followed or handed-over topic): tierflow never saw its objects.
    stored_bytes: int | None
    states: dict[str, int]
    verified: int | None  # segments read back identical, of ``checked``; None: not checked
    checked: int

    def as_dict(self) -> dict:
        return asdict(self)


def partition_figures(
    store: MetadataStore, log_: PartitionLog, checks: Sequence[SegmentCheck] = ()
) -> PartitionFigures:
    topic = store.topic(log_.topic)
    rows = store.segments(topic.topic_id, log_.partition)
    finished = [r for r in rows if r.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
    mine = [c for c in checks if (c.topic, c.partition) == (log_.topic, log_.partition)]
    segments = log_.segments()
    return PartitionFigures(
        topic=log_.topic,
        partition=log_.partition,
        local_segments=len(segments),
        local_bytes=sum(s.size_in_bytes() for s in segments),
        remote_segments=len(finished),
        remote_bytes=sum(r.segment_size_bytes for r in finished),
        stored_bytes=_stored_bytes(store, finished),
        states=dict(sorted(Counter(_SHORT[RemoteLogSegmentState(r.state)] for r in rows).items())),
        verified=sum(1 for c in mine if c.identical) if mine else None,
        checked=len(mine),
    )


def _stored_bytes(store: MetadataStore, finished: Sequence[RemoteLogSegment]) -> int | None:
    """What tierflow recorded of the segments' objects. A broker's segment has no object rows
    (its copier wrote them, tierflow only mirrored its metadata): None then, as a sum that
    counts it as 0 bytes would report megabytes tiered as nothing stored."""
    if any(r.writer != TIERFLOW_COPIER for r in finished):
        return None
    return sum(o.size for r in finished for o in store.segment_objects(r.segment_id))


def partition_table(
    figures: Sequence[PartitionFigures], title: str = "Tiered storage per partition"
) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD)
    table.add_column("partition", no_wrap=True)
    table.add_column("segments\nlocal/remote", justify="right", no_wrap=True)
    table.add_column("size\nlocal/remote", justify="right", no_wrap=True)
    table.add_column("stored\n(compression)", justify="right", no_wrap=True)
    table.add_column("remote states", no_wrap=True)
    table.add_column("verified", justify="right", no_wrap=True)
    for f in figures:
        table.add_row(
            f"{f.topic}-{f.partition}",
            f"{f.local_segments} / {f.remote_segments}",
            f"{human_bytes(f.local_bytes)} / {human_bytes(f.remote_bytes)}",
            _stored_cell(f),
            ", ".join(f"{name} {n}" for name, n in f.states.items()) or "-",
            "-" if f.verified is None else f"{f.verified}/{f.checked}",
        )
    return table


def _stored_cell(f: PartitionFigures) -> str:
    """``1.2 MiB (3.4x)``; ``-`` when a broker's segments make the stored size unknown."""
    if f.stored_bytes is None:
        return "-"
    return f"{human_bytes(f.stored_bytes)} ({compression_ratio(f.remote_bytes, f.stored_bytes)})"
