"""The work behind ``tierflow compact`` (its options are in ``compaction_commands``): imported
when it runs."""

from __future__ import annotations

import argparse

from tierflow.cli.common import as_command_error, cli_actor, parse_now
from tierflow.cli.shared import console, each_partition, print_rows
from tierflow.config import Settings
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.compaction.report import (
    CompactionFailedError,
    CompactionOptions,
    CompactionReport,
)
from tierflow.lifecycle.compaction.swap import compact_partition
from tierflow.lifecycle.compaction.targets import NotCompactedError, compaction_targets
from tierflow.lifecycle.copy.lease import PartitionBusyError
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.models import Topic
from tierflow.runtime import open_storage, open_store
from tierflow.units import counted, human_bytes

ERRORS = (CompactionFailedError, PartitionBusyError, MetadataError)


def compact_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store, rsm = open_store(settings), open_storage(settings)
    now_ms = wall_clock_ms() if args.now is None else parse_now(args.now)
    options = CompactionOptions(
        now_ms=now_ms,
        force=args.force,
        lease_ttl_s=settings.copy_lease_ttl_s,
        holder=LeaseHolder.this_process(),
    )
    with as_command_error(*ERRORS, NotCompactedError):
        targets = compaction_targets(store, now_ms=now_ms, topic=args.topic, force=args.force)
    owner = args.owner or cli_actor()

    def compact(topic: Topic, partition: int) -> CompactionReport:
        return compact_partition(
            store, rsm, topic.topic_id, partition, options, owner=owner, dry_run=args.dry_run
        )

    reports, failed = each_partition(targets, compact, lambda topic: topic.name, ERRORS)
    print_rows(args.json, reports, lambda r: describe(r, args.dry_run), dry_run=args.dry_run)
    if not args.json:
        console.print(totals_line(reports, len(targets), args.dry_run), highlight=False)
    return 1 if failed else 0


def describe(report: CompactionReport, dry_run: bool) -> str:
    label = f"{report.topic}-{report.partition}"
    if report.skipped:
        return f"{label}: skipped, {report.skipped}"
    if dry_run:
        groups = ", ".join(f"{s}-{e} ({human_bytes(b)})" for s, e, b in report.pending)
        count = counted(len(report.pending), "group")
        return f"{label}: would compact {count}: {groups} ({report.reason})"
    written = sum(w[2] for w in report.written)
    return (
        f"{label}: {counted(len(report.replaced), 'segment')}, {human_bytes(report.source_bytes)}, "
        f"compacted into {len(report.written)} of {human_bytes(written)}"
        f" ({counted(report.unchanged, 'group')} already compact; "
        f"{report.reason or 'finishing a swap'})"
    )


def totals_line(reports: list[CompactionReport], partitions: int, dry_run: bool) -> str:
    if not partitions:
        return "no partition has compaction work"
    verb = "would compact" if dry_run else "reclaimed"
    reclaimed = human_bytes(sum(r.reclaimed_bytes for r in reports))
    return f"{counted(partitions, 'partition')}; {verb}" + ("" if dry_run else f" {reclaimed}")
