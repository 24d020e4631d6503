"""The work behind ``tierflow status`` (its options are in ``status_commands``): imported when
it runs."""

from __future__ import annotations

import argparse
import json

from rich.table import Table

from tierflow.cli.common import as_command_error, options_from
from tierflow.cli.status_tables import (
    BROKER_COLUMNS,
    EVENTS,
    EXPORT,
    HISTORY,
    RETENTION,
    SCRUB,
    STUCK,
    broker_row,
    console,
    more,
    partition_table,
    table,
    topic_table,
)
from tierflow.cluster.unread import named, why_unread
from tierflow.config import Settings
from tierflow.metadata.errors import UnknownTopicError
from tierflow.operator_view.model import OperatorSnapshot, PartitionPage
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.paging import page_range
from tierflow.operator_view.snapshot import snapshot_from_settings
from tierflow.units import human_duration, iso_utc


def status_command(args: argparse.Namespace) -> int:
    with as_command_error(UnknownTopicError, ValueError):
        options = options_from(ViewOptions, args, stuck_after_s=args.stuck_after)
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


def tables_after(snapshot: OperatorSnapshot) -> list[Table | str]:
    """Retention preview, stuck segments, scrub findings, events (and history): the page's
    other sections."""
    retention = snapshot.retention
    found: list[Table | str] = [
        RETENTION.table(
            f"next retention run, as of {iso_utc(retention.as_of_ms)}",
            retention.partitions,
            "remote and local are bytes/segments that run would delete from the partitions "
            "listed" + ("" if retention.delete_local_files else " (local: reported only)")
            if snapshot.partition_page.listed
            else "planned for listed partitions only: give --topic or --partition",
        ),
        STUCK.table(
            "stuck segments (STARTED for more than "
            f"{human_duration(snapshot.stuck_after_s * 1000)})",
            snapshot.stuck,
            more(len(snapshot.stuck), snapshot.stuck_total, "stuck segments (oldest shown)"),
        ),
        scrub_findings(snapshot),
        EVENTS.table(
            "latest events (newest first)",
            snapshot.events,
            more(len(snapshot.events), snapshot.events_total, "events (tierflow events)"),
        ),
    ]
    if snapshot.export_lag:
        found.append(
            EXPORT.table("Iceberg export lag (remote retention waits for it)", snapshot.export_lag)
        )
    if snapshot.history is not None:
        found.append(HISTORY.table("remote size and copy lag over time", snapshot.history))
    return found


def scrub_findings(snapshot: OperatorSnapshot) -> Table | str:
    """The open findings' count, and the findings when there are any: an empty table would
    only repeat its headers."""
    total = snapshot.scrub_findings_total
    if not snapshot.scrub_findings:
        return f"open scrub findings: {total}"
    return SCRUB.table(
        f"open scrub findings: {total} (oldest check first)",
        snapshot.scrub_findings,
        more(len(snapshot.scrub_findings), total, "scrub findings (oldest checks shown)"),
    )
