"""Rich tables shared by the CLI commands."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich import box
from rich.table import Table

from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.copy.verify import SegmentCheck
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.units import compression_ratio, human_bytes

_SHORT = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: "copy-started",
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: "finished",
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: "delete-started",
    RemoteLogSegmentState.DELETE_SEGMENT_FINISHED: "deleted",
}


def partition_table(
    store: MetadataStore,
    logs: Sequence[PartitionLog],
    checks: Sequence[SegmentCheck] = (),
    title: str = "Tiered storage per partition",
) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD)
    table.add_column("partition", no_wrap=True)
    table.add_column("segments\nlocal/remote", justify="right", no_wrap=True)
    table.add_column("bytes\nlocal/remote", justify="right", no_wrap=True)
    table.add_column("stored\n(compression)", justify="right", no_wrap=True)
    table.add_column("remote states", no_wrap=True)
    table.add_column("verified", justify="right", no_wrap=True)
    for log_ in logs:
        topic = store.topic(log_.topic)
        rows = store.segments(topic.topic_id, log_.partition)
        finished = [r for r in rows if r.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
        states = Counter(_SHORT[RemoteLogSegmentState(r.state)] for r in rows)
        mine = [c for c in checks if (c.topic, c.partition) == (log_.topic, log_.partition)]
        identical = sum(1 for c in mine if c.identical)
        segments = log_.segments()
        local_bytes = sum(s.size_in_bytes() for s in segments)
        remote_bytes = sum(r.segment_size_bytes for r in finished)
        stored = sum(o.size for r in finished for o in store.segment_objects(r.segment_id))
        table.add_row(
            f"{log_.topic}-{log_.partition}",
            f"{len(segments)} / {len(finished)}",
            f"{human_bytes(local_bytes)} / {human_bytes(remote_bytes)}",
            f"{human_bytes(stored)} ({compression_ratio(remote_bytes, stored)})",
            ", ".join(f"{name} {n}" for name, n in sorted(states.items())) or "-",
            f"{identical}/{len(mine)}" if mine else "-",
        )
    return table
