"""``tierflow compact``: one remote_compaction run from a shell, partition after partition."""

from __future__ import annotations

import argparse

from tierflow.cli.commands import console
from tierflow.cli.common import (
    as_command_error,
    cli_actor,
    parse_now,
    partition_failed,
    print_json,
)
from tierflow.cli.spec import OWNER, Command, add_commands, arg, flag
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
from tierflow.runtime import open_storage, open_store
from tierflow.units import counted, error_line, human_bytes

ERRORS = (CompactionFailedError, PartitionBusyError, MetadataError)

DESCRIPTION = """\
Compact the tiered segments of compacted topics (cleanup.policy=compact) as Kafka's log
cleaner compacts a log: what one remote_compaction DAG run does, here in this process.

A partition is compacted when its cleanable range is due: the dirty ratio (bytes after the
last compaction over all) reaches min.cleanable.dirty.ratio, or the first dirty segment is
older than max.compaction.lag.ms; --force compacts any cleanable range. The range leaves
out the head still on the broker, segments younger than min.compaction.lag.ms and any
transaction whose marker is not tiered yet. Per key the latest record stays, byte for byte
at its offset; tombstones older than delete.retention.ms go, and so do aborted transactions.
Consecutive segments up to segment.bytes become one new segment; the segments it replaces
are deleted only once it is verified and COPY_SEGMENT_FINISHED.

A killed or interrupted run is finished by the next one: a plain rerun on this host takes
over the lease of a run whose process is gone (the same --owner takes it over at once). A
partition whose lease another run holds is named on stderr with who holds it, since and until
when (TIERFLOW_COPY_LEASE_TTL_S from its taking), and how to take it.

Exit status: 0 done, 1 some partition failed (each is named on one line on stderr), 2 --topic
names a topic that is not compacted, 3 --topic names no known topic.
"""


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
    reports: list[CompactionReport] = []
    failed = 0
    for topic, partition in targets:
        try:
            reports.append(
                compact_partition(
                    store,
                    rsm,
                    topic.topic_id,
                    partition,
                    options,
                    owner=args.owner or cli_actor(),
                    dry_run=args.dry_run,
                )
            )
        except ERRORS as exc:
            failed += 1
            partition_failed(f"{topic.name}-{partition}", error_line(exc))
    if args.json:
        print_json({"dry_run": args.dry_run, "partitions": [r.as_dict() for r in reports]})
    else:
        for report in reports:
            console.print(describe(report, args.dry_run), highlight=False)
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


COMPACT = Command(
    "compact",
    compact_command,
    help="compact the tiered segments of compacted topics (what remote_compaction runs)",
    description=DESCRIPTION,
    raw=True,
    args=(
        arg("--topic", help="only this topic [every compacted tiered topic]"),
        flag("--force", "compact every cleanable range, whatever its dirty ratio"),
        arg(
            "--now",
            metavar="ISO",
            help="judge lags and tombstones as of this ISO-8601 instant [the current time]",
        ),
        OWNER,
        flag("--dry-run", "list the groups each partition would get; change nothing"),
        flag("--json", "print each partition's report as JSON, for scripts"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    add_commands(sub, (COMPACT,))
