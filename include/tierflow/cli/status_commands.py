"""``tierflow status``: per partition, what is local, what is remote and how far behind each is.

The figures are ``tierflow.metrics``' (Kafka's RemoteCopyLag*, RemoteDeleteLag*,
RemoteLogSizeBytes, RemoteLogMetadataCount) next to the offsets that explain them. The
table and ``--json`` print the same numbers; bytes are exact, not rounded.
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
from tierflow.metrics import PartitionMetrics, TopicMetrics, aggregate_by_topic, compute_metrics
from tierflow.runtime import open_store

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
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``status`` to the ``tierflow`` command."""
    status = sub.add_parser(
        "status",
        help="local and remote sizes, copy and delete lag, offsets, per partition",
        description="Per partition of the registered topics: local segments and bytes (from "
        "the log dirs), remote segments and bytes by state, Kafka's RemoteCopyLagBytes/"
        "Segments (local segments above the highest remote offset, less the active one), "
        "RemoteDeleteLagBytes/Segments (deletes started, not finished), RemoteLogSizeBytes, "
        "RemoteLogMetadataCount, the log start, local log start and highest remote offsets "
        "and the topic's tiered state and epoch. '-' means the partition is not in the log "
        "dirs.",
    )
    status.add_argument("--topic", help="only this topic [all registered topics]")
    status.add_argument("--partition", type=int, help="only this partition [all]")
    status.add_argument(
        "--json", action="store_true", help="print the same figures as JSON, for scripts"
    )
    status.set_defaults(func=status_command)


def status_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store = open_store(settings)
    try:
        metrics = compute_metrics(
            store, settings.log_dirs, topic=args.topic, partition=args.partition
        )
    except UnknownTopicError as exc:
        raise CommandError(str(exc)) from exc
    finally:
        store.close()
    topics = aggregate_by_topic(metrics)
    if args.json:
        report = {
            "partitions": [m.as_dict() for m in metrics],
            "topics": [t.as_dict() for t in topics],
        }
        print(json.dumps(report, indent=2))
        return 0
    out = _out()
    if not metrics:
        out.print("no registered partitions")
        return 0
    out.print(partition_table(metrics))
    out.print(topic_table(topics))
    return 0


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


def topic_row(t: TopicMetrics) -> list[str]:
    return [
        t.topic,
        str(t.partitions),
        _pair(t.local_bytes, t.local_segments),
        *(_pair(t.remote[state].bytes, t.remote[state].segments) for _n, state in REMOTE_COLUMNS),
        _pair(t.remote_copy_lag_bytes, t.remote_copy_lag_segments),
        _pair(t.remote_delete_lag_bytes, t.remote_delete_lag_segments),
        str(t.remote_log_size_bytes),
        str(t.remote_log_metadata_count),
    ]


def partition_table(metrics: list[PartitionMetrics]) -> Table:
    return _table("partitions", COLUMNS, [partition_row(m) for m in metrics], CAPTION)


def topic_table(topics: list[TopicMetrics]) -> Table:
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
        justify = "left" if column in ("topic", "tiered/epoch") else "right"
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    return table


def _out() -> Console:
    # Pipes and test captures get a width that fits the whole table on one line per row.
    return Console(width=None if sys.stdout.isatty() else 240, soft_wrap=True)


def _pair(size: int | None, count: int | None) -> str:
    """``bytes/segments``; ``-`` when unknown (the partition is not in the log dirs)."""
    return "-" if size is None or count is None else f"{size}/{count}"
