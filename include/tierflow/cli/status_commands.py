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

from rich.table import Table

from tierflow.cli.common import as_command_error
from tierflow.cli.spec import (
    Command,
    add_commands,
    arg,
    flag,
    partition_option,
)
from tierflow.cli.status_tables import (
    BROKER_COLUMNS,
    COLUMNS,
    EVENT_COLUMNS,
    EXPORT_COLUMNS,
    HISTORY_COLUMNS,
    RETENTION_COLUMNS,
    STUCK_COLUMNS,
    broker_row,
    console,
    event_row,
    export_row,
    history_row,
    more,
    partition_table,
    retention_row,
    stuck_row,
    table,
    topic_table,
)
from tierflow.cluster.unread import named, why_unread
from tierflow.config import Settings
from tierflow.metadata.errors import UnknownTopicError
from tierflow.operator_view.model import OperatorSnapshot, PartitionPage
from tierflow.operator_view.options import DEFAULT_LIMIT, MAX_LIMIT, ViewOptions
from tierflow.operator_view.paging import page_range
from tierflow.operator_view.snapshot import snapshot_from_settings
from tierflow.units import human_duration, iso_utc

DEFAULT_EVENTS = 10


def status_command(args: argparse.Namespace) -> int:
    with as_command_error(UnknownTopicError, ValueError):
        options = ViewOptions(
            topic=args.topic,
            partition=args.partition,
            stuck_after_s=args.stuck_after,
            events=args.events,
            history=args.history,
            page=args.page,
            limit=args.limit,
        )
        snapshot = snapshot_from_settings(Settings.from_env(), options)
    if args.json:
        print(json.dumps(snapshot.as_dict(), indent=2))
        return 0
    out = console()
    for found in tables_before(snapshot):
        out.print(found)
    out.print(partitions_line(snapshot.partition_page))
    for line in leaderless_lines(snapshot):
        out.print(line)
    for found in tables_after(snapshot):
        out.print(found)
    return 0


def tables_before(snapshot: OperatorSnapshot) -> list[Table]:
    """Topics, brokers (with more than one) and the page of partitions asked for."""
    if not snapshot.topics:
        return []
    found = [topic_table(snapshot.topics)]
    if len(snapshot.brokers) > 1:
        rows = [broker_row(b) for b in snapshot.brokers]
        found.append(table("brokers (their leader partitions summed)", BROKER_COLUMNS, rows))
    if snapshot.partition_page.listed:
        found.append(partition_table(snapshot.partitions))
    return found


def partitions_line(page: PartitionPage) -> str:
    if not page.listed:
        return (
            f"{page.total} partitions, summed per topic; --topic TOPIC (or --partition N) "
            f"lists them, {page.limit} a page"
        )
    line = f"page {page.page} of {page.pages}: {page_range(page)}"
    if page.page < page.pages:
        line += f"; --page {page.page + 1} for the next"
    return line


def leaderless_lines(snapshot: OperatorSnapshot) -> list[str]:
    """Partitions the metadata gives no leader, counted per topic; those no replica is read
    of, and why. Nothing when every partition has its leader."""
    lines = []
    counted = ", ".join(f"{t.topic} {t.leaderless}" for t in snapshot.topics if t.leaderless)
    if counted:
        line = (
            f"leaderless partitions (no leader in the metadata; a stopped cluster's are shown "
            f"from their last leader's replica): {counted}"
        )
        shown = [f"{p.topic}-{p.partition}" for p in snapshot.partitions if p.leaderless]
        lines.append(line + (f"; on this page: {named(shown)}" if shown else ""))
    if snapshot.unread:
        lines.append(f"not read: {why_unread(snapshot.unread)}")
    return lines


def tables_after(snapshot: OperatorSnapshot) -> list[Table]:
    """Retention preview, stuck segments, events (and history): the page's other sections."""
    retention = snapshot.retention
    found = [
        table(
            f"next retention run, as of {iso_utc(retention.as_of_ms)}",
            RETENTION_COLUMNS,
            [retention_row(p) for p in retention.partitions],
            "remote and local are bytes/segments that run would delete from the partitions "
            "listed" + ("" if retention.delete_local_files else " (local: reported only)")
            if snapshot.partition_page.listed
            else "planned for listed partitions only: give --topic or --partition",
        ),
        table(
            "stuck segments (STARTED for more than "
            f"{human_duration(snapshot.stuck_after_s * 1000)})",
            STUCK_COLUMNS,
            [stuck_row(s) for s in snapshot.stuck],
            more(len(snapshot.stuck), snapshot.stuck_total, "stuck segments (oldest shown)"),
        ),
        table(
            "latest events (newest first)",
            EVENT_COLUMNS,
            [event_row(e) for e in snapshot.events],
            more(len(snapshot.events), snapshot.events_total, "events (tierflow events)"),
        ),
    ]
    if snapshot.export_lag:
        found.append(
            table(
                "Iceberg export lag (remote retention waits for it)",
                EXPORT_COLUMNS,
                [export_row(lag) for lag in snapshot.export_lag],
            )
        )
    if snapshot.history is not None:
        found.append(
            table(
                "remote size and copy lag over time",
                HISTORY_COLUMNS,
                [history_row(h) for h in snapshot.history],
            )
        )
    return found


STATUS = Command(
    "status",
    status_command,
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
    "partition is not in the log dirs. At cluster scale the partitions are summed per "
    "topic (and per broker, with several); --topic or --partition lists them one by one, "
    "a page at a time, with the retention plan of that page.",
    args=(
        arg("--topic", help="only this topic, and list its partitions [all topics, summed]"),
        partition_option("only partitions with this number, listed [all]"),
        arg("--page", type=int, default=1, help="which page of the listed partitions [1]"),
        arg(
            "--limit",
            type=int,
            default=DEFAULT_LIMIT,
            help=f"partitions a page, at most {MAX_LIMIT} [{DEFAULT_LIMIT}]",
        ),
        arg(
            "--stuck-after",
            type=int,
            metavar="SECONDS",
            help="a segment in a STARTED state for longer is stuck [TIERFLOW_STALE_COPY_GRACE_S]",
        ),
        arg("--events", type=int, default=DEFAULT_EVENTS, help=f"latest events [{DEFAULT_EVENTS}]"),
        flag("--history", "also remote size and copy lag over time (the page's chart)"),
        flag("--json", "print the same figures as JSON, for scripts"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``status`` to the ``tierflow`` command."""
    add_commands(sub, (STATUS,))


__all__ = ["COLUMNS", "register"]
