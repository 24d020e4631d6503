"""The tables of ``tierflow status``: one row function per section of the page.

Sizes in human units and times in ISO-8601 UTC (tierflow.units), offsets and counts exact;
``--json`` has every figure exact (bytes, milliseconds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

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
    ScrubFindingView,
    StuckSegment,
    TopicView,
)
from tierflow.tasks.attribution import TaskInstanceRef, actor_base
from tierflow.units import human_bytes, human_duration, iso_utc

Item = TypeVar("Item")  # what one row of a table shows

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
BROKER_COLUMNS = ("broker", "partitions", *FIGURE_COLUMNS)


@dataclass(frozen=True)
class Columns(Generic[Item]):
    """A table whose every column is one cell of an item: each header beside what it shows,
    so a column is added or moved in one place."""

    cells: tuple[tuple[str, Callable[[Item], str]], ...]

    @property
    def headers(self) -> tuple[str, ...]:
        return tuple(header for header, _cell in self.cells)

    def row(self, item: Item) -> list[str]:
        return [cell(item) for _header, cell in self.cells]

    def table(self, title: str, items: Iterable[Item], caption: str | None = None) -> Table:
        return table(title, self.headers, [self.row(item) for item in items], caption)


# The cells several tables show alike, of any item with the attribute.
Cell = tuple[str, Callable[[Any], str]]
TOPIC: Cell = ("topic", lambda item: item.topic)
PARTITION: Cell = ("partition", lambda item: str(item.partition))
TASK_INSTANCE: Cell = ("task instance", lambda item: _task_instance(item.task_instance))


RETENTION: Columns[PartitionRetention] = Columns(
    (
        TOPIC,
        PARTITION,
        ("remote", lambda p: _pair(p.remote_bytes, p.remote_segments)),
        ("local", lambda p: _pair(p.local_bytes, p.local_segments)),
        ("new log start", lambda p: optional(p.new_log_start_offset)),
        ("new local start", lambda p: optional(p.new_local_log_start_offset)),
        ("note", lambda p: "; ".join(filter(None, [p.stopped_at, *p.blocked]))),
    )
)
STUCK: Columns[StuckSegment] = Columns(
    (
        TOPIC,
        PARTITION,
        ("segment", lambda s: s.segment_id),
        ("state", lambda s: s.state),
        ("offsets", lambda s: f"{s.start_offset}-{s.end_offset}"),
        ("size", lambda s: human_bytes(s.size_bytes)),
        ("since", lambda s: iso_utc(s.since_ms)),
        ("age", lambda s: human_duration(s.age_ms)),
        ("started by", lambda s: actor_base(s.actor)),
        TASK_INSTANCE,
    )
)
SCRUB: Columns[ScrubFindingView] = Columns(
    (
        TOPIC,
        PARTITION,
        ("segment", lambda f: f.segment_id),
        ("offsets", lambda f: f"{f.start_offset}-{f.end_offset}"),
        ("object", lambda f: f.key),
        ("finding", lambda f: f.finding),
        ("checked", lambda f: iso_utc(f.checked_ms)),
    )
)
EVENTS: Columns[EventView] = Columns(
    (
        ("#", lambda e: str(e.id)),
        ("time", lambda e: iso_utc(e.time_ms)),
        ("entity", lambda e: e.entity),
        TOPIC,
        ("partition", lambda e: optional(e.partition)),
        ("segment", lambda e: e.segment_id or ""),
        ("from", lambda e: e.from_state or ""),
        ("to", lambda e: e.to_state),
        ("by", lambda e: actor_base(e.actor)),
        TASK_INSTANCE,
    )
)
EXPORT: Columns[PartitionLag] = Columns(
    (
        TOPIC,
        PARTITION,
        ("remote end", lambda lag: str(lag.remote_end_offset)),
        ("exported to", lambda lag: str(lag.exported_end_offset)),
        ("lag", lambda lag: str(lag.lag_offsets)),
        ("lag size", lambda lag: human_bytes(lag.lag_bytes)),
    )
)
HISTORY: Columns[HistoryPoint] = Columns(
    (
        ("time", lambda h: iso_utc(h.time_ms)),
        ("remote size", lambda h: human_bytes(h.remote_log_size_bytes)),
        ("copy lag", lambda h: human_bytes(h.remote_copy_lag_bytes)),
    )
)


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
        "object",
        "finding",
        "checked",
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
