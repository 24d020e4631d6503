"""The tables of ``tierflow status``: one row function per section of the page.

Sizes in human units and times in ISO-8601 UTC (tierflow.units), offsets and counts exact;
``--json`` has every figure exact (bytes, milliseconds).
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from tierflow.cli.console import stdout_console
from tierflow.export.status import PartitionLag
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metrics import SummedMetrics, TopicMetrics
from tierflow.operator_view.formatting import retention_bytes, retention_ms
from tierflow.operator_view.model import (
    BrokerView,
    EventView,
    HistoryPoint,
    PartitionRetention,
    PartitionView,
    StuckSegment,
    TopicView,
)
from tierflow.tasks.attribution import TaskInstanceRef, actor_base
from tierflow.units import human_bytes, human_duration, iso_utc

_S = RemoteLogSegmentState
# (column header, state) for the remote-by-state columns; DELETE_SEGMENT_FINISHED rows are
# tombstones of data already gone, so they are not shown.
REMOTE_COLUMNS = (
    ("copying", _S.COPY_SEGMENT_STARTED),
    ("remote", _S.COPY_SEGMENT_FINISHED),
    ("deleting", _S.DELETE_SEGMENT_STARTED),
)
# The figures a partition row, a topic row and a broker row all have (summed for the latter).
FIGURE_COLUMNS = (
    "local",
    *(name for name, _state in REMOTE_COLUMNS),
    "copy lag",
    "delete lag",
    "remote size",
    "metadata",
)
COLUMNS = (
    "topic",
    "partition",
    "broker",
    *FIGURE_COLUMNS,
    "highest remote",
    "log start",
    "local start",
    "tiered/epoch",
)
CAPTION = (
    "local, copying (COPY_SEGMENT_STARTED), remote (COPY_SEGMENT_FINISHED), deleting "
    "(DELETE_SEGMENT_STARTED), copy lag (RemoteCopyLag*) and delete lag (RemoteDeleteLag*) are "
    "size / segments; remote size is RemoteLogSizeBytes, metadata RemoteLogMetadataCount"
)
# The topic table: the partition columns that add up.
TOPIC_COLUMNS = (
    "topic",
    "partitions",
    *FIGURE_COLUMNS,
    "tiered/epoch",
    "retention time/size",
    "local retention time/size",
)
RETENTION_COLUMNS = (
    "topic",
    "partition",
    "remote",
    "local",
    "new log start",
    "new local start",
    "note",
)
STUCK_COLUMNS = (
    "topic",
    "partition",
    "segment",
    "state",
    "offsets",
    "size",
    "since",
    "age",
    "started by",
    "task instance",
)
EVENT_COLUMNS = (
    "#",
    "time",
    "entity",
    "topic",
    "partition",
    "segment",
    "from",
    "to",
    "by",
    "task instance",
)
HISTORY_COLUMNS = ("time", "remote size", "copy lag")
BROKER_COLUMNS = ("broker", "partitions", *FIGURE_COLUMNS)


def partition_row(m: PartitionView) -> list[str]:
    return [
        m.topic,
        str(m.partition),
        optional(m.broker),
        *_figures(m),
        str(m.highest_remote_offset),
        str(m.log_start_offset),
        str(m.local_log_start_offset),
        f"{m.tiered_state}/{m.tiered_epoch}",
    ]


def topic_row(t: TopicMetrics | TopicView) -> list[str]:
    settings = []
    if isinstance(t, TopicView):
        settings = [
            f"{t.tiered_state}/{t.tiered_epoch}",
            _retention(t.retention_ms, t.retention_bytes),
            _retention(t.effective_local_retention_ms, t.effective_local_retention_bytes),
        ]
    return [t.topic, *_summed(t), *settings]


def retention_row(p: PartitionRetention) -> list[str]:
    return [
        p.topic,
        str(p.partition),
        _pair(p.remote_bytes, p.remote_segments),
        _pair(p.local_bytes, p.local_segments),
        optional(p.new_log_start_offset),
        optional(p.new_local_log_start_offset),
        "; ".join(filter(None, [p.stopped_at, *p.blocked])),
    ]


EXPORT_COLUMNS = ("topic", "partition", "remote end", "exported to", "lag", "lag size")


def export_row(lag: PartitionLag) -> list[str]:
    return [
        lag.topic,
        str(lag.partition),
        str(lag.remote_end_offset),
        str(lag.exported_end_offset),
        str(lag.lag_offsets),
        human_bytes(lag.lag_bytes),
    ]


def stuck_row(s: StuckSegment) -> list[str]:
    return [
        s.topic,
        str(s.partition),
        s.segment_id,
        s.state,
        f"{s.start_offset}-{s.end_offset}",
        human_bytes(s.size_bytes),
        iso_utc(s.since_ms),
        human_duration(s.age_ms),
        actor_base(s.actor),
        _task_instance(s.task_instance),
    ]


def event_row(e: EventView) -> list[str]:
    return [
        str(e.id),
        iso_utc(e.time_ms),
        e.entity,
        e.topic,
        optional(e.partition),
        e.segment_id or "",
        e.from_state or "",
        e.to_state,
        actor_base(e.actor),
        _task_instance(e.task_instance),
    ]


def history_row(h: HistoryPoint) -> list[str]:
    return [
        iso_utc(h.time_ms),
        human_bytes(h.remote_log_size_bytes),
        human_bytes(h.remote_copy_lag_bytes),
    ]


def broker_row(b: BrokerView) -> list[str]:
    return [optional(b.broker), *_summed(b)]


def _summed(s: SummedMetrics) -> list[str]:
    """The columns a topic row and a broker row share: their partitions' figures summed."""
    return [str(s.partitions), *_figures(s)]


def _figures(m: SummedMetrics | PartitionView) -> list[str]:
    """The FIGURE_COLUMNS of one partition, or of several summed."""
    return [
        _pair(m.local_bytes, m.local_segments),
        *(_pair(m.remote[state].bytes, m.remote[state].segments) for _n, state in REMOTE_COLUMNS),
        _pair(m.remote_copy_lag_bytes, m.remote_copy_lag_segments),
        _pair(m.remote_delete_lag_bytes, m.remote_delete_lag_segments),
        human_bytes(m.remote_log_size_bytes),
        str(m.remote_log_metadata_count),
    ]


def partition_table(metrics: list[PartitionView]) -> Table:
    return table("partitions", COLUMNS, [partition_row(m) for m in metrics], CAPTION)


def topic_table(topics: list[TopicView]) -> Table:
    return table("topics (sum of partitions)", TOPIC_COLUMNS, [topic_row(t) for t in topics])


def table(
    title: str, columns: tuple[str, ...], rows: list[list[str]], caption: str | None = None
) -> Table:
    table = Table(
        title=title,
        caption=caption,
        box=box.SIMPLE_HEAD,
        title_justify="left",
        caption_justify="left",
    )
    for column in columns:
        justify = "left" if column in LEFT_ALIGNED else "right"
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    return table


# Columns of text; all others hold figures and are right-aligned.
LEFT_ALIGNED = frozenset(
    {
        "topic",
        "tiered/epoch",
        "retention time/size",
        "local retention time/size",
        "note",
        "segment",
        "state",
        "offsets",
        "since",
        "started by",
        "task instance",
        "time",
        "entity",
        "from",
        "to",
        "by",
    }
)


def console() -> Console:
    # The whole table on one line per row off a terminal (cli.console).
    return stdout_console(soft_wrap=True)


def optional(value: int | None) -> str:
    return "-" if value is None else str(value)


def _task_instance(ti: TaskInstanceRef | None) -> str:
    if ti is None:
        return "-"
    mapped = f"[{ti.map_index}]" if ti.map_index >= 0 else ""
    return f"{ti.dag_id} {ti.run_id} {ti.task_id}{mapped}"


def more(shown: int, total: int, what: str) -> str | None:
    return f"and {total - shown} more {what}" if total > shown else None


def _pair(size: int | None, count: int | None) -> str:
    """``1.50 MiB / 3`` (size / segments); ``-`` when unknown (not in the log dirs)."""
    return "-" if size is None or count is None else f"{human_bytes(size)} / {count}"


def _retention(ms: int, size: int) -> str:
    """``7 d / unlimited``: Kafka's retention.ms and retention.bytes, -1 and -2 spelled out."""
    return f"{retention_ms(ms)} / {retention_bytes(size)}"
