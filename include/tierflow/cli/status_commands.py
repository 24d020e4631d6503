"""``tierflow status``: the Tiered storage page of the Airflow UI, in a terminal.

Per partition and topic, what is local, what is remote and how far behind each is
(``tierflow.metrics``: Kafka's RemoteCopyLag*, RemoteDeleteLag*, RemoteLogSizeBytes,
RemoteLogMetadataCount) next to the offsets and settings that explain them; then what the next
retention run would delete, the segments stuck in a STARTED state and the latest events. The
page, the tables and ``--json`` print one snapshot (``tierflow.operator_view``); bytes and
offsets are exact, not rounded.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich import box
from rich.console import Console
from rich.table import Table

from tierflow.cli.commands import CommandError
from tierflow.config import Settings
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metrics import PartitionMetrics, TopicMetrics
from tierflow.operator_view.formatting import utc
from tierflow.operator_view.model import (
    EventView,
    HistoryPoint,
    OperatorSnapshot,
    PartitionRetention,
    StuckSegment,
    TopicView,
)
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import snapshot_from_settings
from tierflow.tasks.attribution import TaskInstanceRef, actor_base

_S = RemoteLogSegmentState
# (column header, state) for the remote-by-state columns; DELETE_SEGMENT_FINISHED rows are
# tombstones of data already gone, so they are not shown.
REMOTE_COLUMNS = (
    ("copying", _S.COPY_SEGMENT_STARTED),
    ("remote", _S.COPY_SEGMENT_FINISHED),
    ("deleting", _S.DELETE_SEGMENT_STARTED),
)
COLUMNS = (
    "topic",
    "partition",
    "local",
    *(name for name, _state in REMOTE_COLUMNS),
    "copy lag",
    "delete lag",
    "remote size",
    "metadata",
    "highest remote",
    "log start",
    "local start",
    "tiered/epoch",
)
CAPTION = (
    "local, copying (COPY_SEGMENT_STARTED), remote (COPY_SEGMENT_FINISHED), deleting "
    "(DELETE_SEGMENT_STARTED), copy lag (RemoteCopyLag*) and delete lag (RemoteDeleteLag*) are "
    "bytes/segments; remote size is RemoteLogSizeBytes, metadata RemoteLogMetadataCount"
)
# The topic table: the partition columns that add up.
TOPIC_COLUMNS = (
    "topic",
    "partitions",
    "local",
    *(name for name, _state in REMOTE_COLUMNS),
    "copy lag",
    "delete lag",
    "remote size",
    "metadata",
    "tiered/epoch",
    "retention ms/bytes",
    "local retention ms/bytes",
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
    "age (s)",
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
DEFAULT_EVENTS = 10


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``status`` to the ``tierflow`` command."""
    status = sub.add_parser(
        "status",
        help="sizes, lags, offsets, next retention run, stuck segments, latest events",
        description="The Tiered storage page of the Airflow UI as tables. Per partition of "
        "the registered topics: local segments and bytes (from the log dirs), remote segments "
        "and bytes by state, Kafka's RemoteCopyLagBytes/Segments (local segments above the "
        "highest remote offset, less the active one), RemoteDeleteLagBytes/Segments (deletes "
        "started, not finished), RemoteLogSizeBytes, RemoteLogMetadataCount, the log start, "
        "local log start and highest remote offsets; per topic the same summed, with its "
        "tiered state, epoch and retention. Then what the next retention_expiry run (02:00 "
        "UTC) would delete, segments stuck in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED "
        "with the task instance that started them, and the latest events. '-' means the "
        "partition is not in the log dirs.",
    )
    status.add_argument("--topic", help="only this topic [all registered topics]")
    status.add_argument("--partition", type=int, help="only this partition [all]")
    status.add_argument(
        "--stuck-after",
        type=int,
        metavar="SECONDS",
        help="a segment in a STARTED state for longer is stuck [TIERFLOW_STALE_COPY_GRACE_S]",
    )
    status.add_argument(
        "--events", type=int, default=DEFAULT_EVENTS, help=f"latest events [{DEFAULT_EVENTS}]"
    )
    status.add_argument(
        "--history",
        action="store_true",
        help="also remote size and copy lag over time (the page's chart)",
    )
    status.add_argument(
        "--json", action="store_true", help="print the same figures as JSON, for scripts"
    )
    status.set_defaults(func=status_command)


def status_command(args: argparse.Namespace) -> int:
    options = ViewOptions(
        topic=args.topic,
        partition=args.partition,
        stuck_after_s=args.stuck_after,
        events=args.events,
        history=args.history,
    )
    try:
        snapshot = snapshot_from_settings(Settings.from_env(), options)
    except UnknownTopicError as exc:
        raise CommandError(str(exc)) from exc
    if args.json:
        print(json.dumps(snapshot.as_dict(), indent=2))
        return 0
    out = _out()
    if not snapshot.partitions:
        out.print("no registered partitions")
    else:
        out.print(partition_table(snapshot.partitions))
        out.print(topic_table(snapshot.topics))
    for table in tables_after(snapshot):
        out.print(table)
    return 0


def tables_after(snapshot: OperatorSnapshot) -> list[Table]:
    """Retention preview, stuck segments, events (and history): the page's other sections."""
    retention = snapshot.retention
    found = [
        _table(
            f"next retention run, as of {utc(retention.as_of_ms)} ({retention.as_of_ms} ms)",
            RETENTION_COLUMNS,
            [retention_row(p) for p in retention.partitions],
            "remote and local are bytes/segments that run would delete"
            + ("" if retention.delete_local_files else " (local: reported only)"),
        ),
        _table(
            f"stuck segments (STARTED for more than {snapshot.stuck_after_s} s)",
            STUCK_COLUMNS,
            [stuck_row(s) for s in snapshot.stuck],
        ),
        _table(
            "latest events (newest first)", EVENT_COLUMNS, [event_row(e) for e in snapshot.events]
        ),
    ]
    if snapshot.history is not None:
        found.append(
            _table(
                "remote size and copy lag over time (bytes)",
                HISTORY_COLUMNS,
                [history_row(h) for h in snapshot.history],
            )
        )
    return found


def partition_row(m: PartitionMetrics) -> list[str]:
    return [
        m.topic,
        str(m.partition),
        _pair(m.local_bytes, m.local_segments),
        *(_pair(m.remote[state].bytes, m.remote[state].segments) for _n, state in REMOTE_COLUMNS),
        _pair(m.remote_copy_lag_bytes, m.remote_copy_lag_segments),
        _pair(m.remote_delete_lag_bytes, m.remote_delete_lag_segments),
        str(m.remote_log_size_bytes),
        str(m.remote_log_metadata_count),
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
            f"{t.retention_ms}/{t.retention_bytes}",
            f"{t.effective_local_retention_ms}/{t.effective_local_retention_bytes}",
        ]
    return [
        t.topic,
        str(t.partitions),
        _pair(t.local_bytes, t.local_segments),
        *(_pair(t.remote[state].bytes, t.remote[state].segments) for _n, state in REMOTE_COLUMNS),
        _pair(t.remote_copy_lag_bytes, t.remote_copy_lag_segments),
        _pair(t.remote_delete_lag_bytes, t.remote_delete_lag_segments),
        str(t.remote_log_size_bytes),
        str(t.remote_log_metadata_count),
        *settings,
    ]


def retention_row(p: PartitionRetention) -> list[str]:
    return [
        p.topic,
        str(p.partition),
        _pair(p.remote_bytes, p.remote_segments),
        _pair(p.local_bytes, p.local_segments),
        _optional(p.new_log_start_offset),
        _optional(p.new_local_log_start_offset),
        "; ".join(filter(None, [p.stopped_at, *p.blocked])),
    ]


def stuck_row(s: StuckSegment) -> list[str]:
    return [
        s.topic,
        str(s.partition),
        s.segment_id,
        s.state,
        f"{s.start_offset}-{s.end_offset}",
        str(s.size_bytes),
        utc(s.since_ms),
        str(s.age_ms // 1000),
        actor_base(s.actor),
        _task_instance(s.task_instance),
    ]


def event_row(e: EventView) -> list[str]:
    return [
        str(e.id),
        utc(e.time_ms, millis=True),
        e.entity,
        e.topic,
        _optional(e.partition),
        e.segment_id or "",
        e.from_state or "",
        e.to_state,
        actor_base(e.actor),
        _task_instance(e.task_instance),
    ]


def history_row(h: HistoryPoint) -> list[str]:
    return [
        utc(h.time_ms, millis=True),
        str(h.remote_log_size_bytes),
        str(h.remote_copy_lag_bytes),
    ]


def partition_table(metrics: list[PartitionMetrics]) -> Table:
    return _table("partitions", COLUMNS, [partition_row(m) for m in metrics], CAPTION)


def topic_table(topics: list[TopicView]) -> Table:
    return _table("topics (sum of partitions)", TOPIC_COLUMNS, [topic_row(t) for t in topics])


def _table(
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
        "retention ms/bytes",
        "local retention ms/bytes",
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


def _out() -> Console:
    # Pipes and test captures get a width that fits the whole table on one line per row.
    return Console(width=None if sys.stdout.isatty() else 320, soft_wrap=True)


def _optional(value: int | None) -> str:
    return "-" if value is None else str(value)


def _task_instance(ti: TaskInstanceRef | None) -> str:
    if ti is None:
        return "-"
    mapped = f"[{ti.map_index}]" if ti.map_index >= 0 else ""
    return f"{ti.dag_id} {ti.run_id} {ti.task_id}{mapped}"


def _pair(size: int | None, count: int | None) -> str:
    """``bytes/segments``; ``-`` when unknown (the partition is not in the log dirs)."""
    return "-" if size is None or count is None else f"{size}/{count}"
