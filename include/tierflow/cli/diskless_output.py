"""What the ``tierflow diskless`` commands print: the tables of describe, retention and the
demo, and the lines of produce and merge."""

from __future__ import annotations

import json

from rich import box
from rich.table import Table

from tierflow.cli.shared import console
from tierflow.demo.diskless import DisklessDemo
from tierflow.diskless.coordinates import PrefixDeletion
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.describe import DisklessOverview
from tierflow.diskless.merge import MergeReport
from tierflow.diskless.produce import ProduceSummary
from tierflow.diskless.writer import WalWriter
from tierflow.units import counted, human_bytes


def print_produced(
    topic: str, writer: WalWriter, summary: ProduceSummary, *, as_json: bool
) -> None:
    offsets = summary.offsets()
    if as_json:
        print(
            json.dumps(
                {
                    "objects": writer.stats.objects,
                    "batches": summary.batches,
                    "bytes": writer.stats.bytes,
                    "offsets": {str(p): list(r) for p, r in sorted(offsets.items())},
                }
            )
        )
        return
    ranges = ", ".join(f"{topic}-{p}: {a}-{b}" for p, (a, b) in sorted(offsets.items()))
    console.print(
        f"produced {counted(summary.batches, 'batch', 'batches')} in "
        f"{counted(writer.stats.objects, 'WAL object')}, "
        f"{human_bytes(writer.stats.bytes)}; offsets {ranges or '-'}"
    )


def print_merged(reports: list[MergeReport], dry_run: bool) -> None:
    for r in reports:
        label = f"{r.topic}-{r.partition}"
        for segment_id in r.cleaned_up:
            console.print(f"{label}: removed abandoned attempt {segment_id}")
        if r.healed_batches:
            console.print(
                f"{label}: dropped {r.healed_batches} batches that a finished segment holds"
            )
        if r.skipped:
            console.print(f"{label}: skipped ({r.skipped})")
        elif dry_run:
            pending = ", ".join(f"{a}-{b} ({human_bytes(n)})" for a, b, n in r.pending) or "nothing"
            console.print(f"{label}: would merge {pending}")
        for s in r.merged:
            console.print(
                f"{label}: merged offsets {s.start_offset}-{s.end_offset} "
                f"({human_bytes(s.size_in_bytes)}) as {s.segment_id}"
            )
    if not dry_run:
        segments = sum(len(r.merged) for r in reports)
        emptied = sum(len(r.objects_emptied) for r in reports)
        batches = sum(r.dropped_batches + r.healed_batches for r in reports)
        console.print(
            f"merged {counted(segments, 'segment')} over {counted(len(reports), 'partition')}; "
            f"{counted(batches, 'batch', 'batches')} dropped from the WAL, "
            f"{counted(emptied, 'WAL object')} emptied"
        )


def print_overview(overview: DisklessOverview, *, show_objects: bool) -> None:
    """The tables of ``describe`` (the demo prints them too)."""
    topics = Table(title="Diskless topics", box=box.SIMPLE_HEAD)
    columns = ("topic", "partitions", "on object storage", "objects holding it")
    for column in (*columns, "of which hold deleted batches", "tiered segments"):
        topics.add_column(column, justify="left" if column == "topic" else "right")
    for t in overview.topics:
        topics.add_row(
            t.topic + ("" if t.merged_into_tiered_storage else " (WAL only)"),
            str(len(t.partitions)),
            human_bytes(t.size_on_object_storage),
            f"{t.objects} / {human_bytes(t.objects_bytes)}",
            f"{t.objects_with_deleted_batches} / "
            f"{human_bytes(t.objects_with_deleted_batches_bytes)} "
            f"({human_bytes(t.deleted_bytes_in_objects)} deleted)",
            f"{t.tiered_segments} / {human_bytes(t.tiered_bytes)}",
        )
    console.print(topics)
    partitions = Table(title="Offsets", box=box.SIMPLE_HEAD)
    for column in ("partition", "log start", "tiered up to", "WAL start", "high watermark"):
        partitions.add_column(column, justify="left" if column == "partition" else "right")
    partitions.add_column("WAL size", justify="right")
    for t in overview.topics:
        for p in t.partitions:
            partitions.add_row(
                f"{t.topic}-{p.partition}",
                str(p.log_start_offset),
                "-" if p.tiered_end_offset < 0 else str(p.tiered_end_offset),
                str(p.wal_start_offset),
                str(p.high_watermark),
                human_bytes(p.wal_bytes),
            )
    console.print(partitions)
    if show_objects:
        objects = Table(title="WAL objects", box=box.SIMPLE_HEAD)
        for column in ("key", "state", "total size", "used size", "batches", "topics"):
            objects.add_column(column, justify="right" if "size" in column else "left")
        for o in overview.objects:
            objects.add_row(
                o.key,
                o.state,
                human_bytes(o.total_size),
                human_bytes(o.used_size),
                str(o.batches),
                ", ".join(o.topics),
            )
        console.print(objects)
    console.print(
        f"{counted(overview.awaiting_deletion, 'emptied WAL object')}, "
        f"{human_bytes(overview.awaiting_deletion_bytes)}, awaiting the garbage collector"
    )


def print_retention(coordinator: DisklessCoordinator, deletions: list[PrefixDeletion]) -> None:
    table = Table(title="Diskless retention", box=box.SIMPLE_HEAD)
    for column in ("partition", "batches", "size", "log start", "objects emptied"):
        table.add_column(column)
    for d in deletions:
        table.add_row(
            f"{coordinator.topic_row(d.topic_id).name}-{d.partition}",
            str(d.batches_deleted),
            human_bytes(d.bytes_deleted),
            str(d.log_start_offset),
            str(len(d.objects_marked)),
        )
    console.print(table)


def print_demo(demo: DisklessDemo) -> None:
    title = "Diskless topics: produced into WAL objects, read back, merged, read back"
    table = Table(title=title, box=box.SIMPLE_HEAD)
    columns = ("partition", "batches", "size", "offsets", "WAL objects", "same")
    for column in (*columns, "segments", "same from tiered"):
        table.add_column(column, no_wrap=True)
    merged = {(r.topic, r.partition): r for r in demo.merged}
    for c, t in zip(demo.checks, demo.tiered_checks, strict=False):
        report = merged.get((c.topic, c.partition))
        table.add_row(
            f"{c.topic}-{c.partition}",
            str(c.batches),
            human_bytes(c.bytes),
            f"{c.first_offset}-{c.next_offset - 1}",
            str(len(c.objects)),
            "yes" if c.identical else "NO",
            str(len(report.merged)) if report else "-",
            "yes" if t.identical and t.tiered_batches == t.batches else "NO",
        )
    console.print(table)
    console.print(
        f"{demo.wal_objects} WAL objects written; {len(demo.gc.deleted)} deleted by the garbage "
        f"collector ({human_bytes(demo.gc.bytes_deleted)}), {demo.wal_objects_left} left"
    )
    verdict = (
        "every read byte-identical to the broker's segments, before and after the merge"
        if demo.ok
        else "DIFFERENT from the broker, or WAL objects left behind"
    )
    console.print(f"bucket {demo.settings.remote_storage}: {verdict}")
