"""``tierflow diskless``: diskless topics (KIP-1163) by hand.

``register`` makes a topic diskless, ``produce`` writes record batches into WAL objects through
the coordinator, ``fetch`` reads them back through the diskless read path (continuing from
tiered segments), ``merge``, ``retention`` and ``gc`` run what the diskless_merge and
diskless_gc DAGs schedule, and ``describe`` is KIP-1163's kafka-diskless-metadata.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from pathlib import Path

from rich import box
from rich.table import Table

from tierflow.cli.commands import KNOWN_ERRORS, CommandError, _parse_config, console
from tierflow.config import Settings
from tierflow.demo.diskless import DisklessDemo, run_diskless_demo
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.describe import DisklessOverview, describe
from tierflow.diskless.errors import DisklessError
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.merge import MergeOptions, MergeReport, merge_partition, merge_targets
from tierflow.diskless.merge_plan import KAFKA_SEGMENT_BYTES
from tierflow.diskless.models import TIMESTAMP_TYPES
from tierflow.diskless.produce import ProduceSummary, produce_files, produce_from_kafka
from tierflow.diskless.retention import enforce_retention
from tierflow.diskless.writer import WalWriter
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.log_config import parse_kafka_configs
from tierflow.metadata.models import Topic
from tierflow.metadata.store import MetadataStore
from tierflow.read.diskless import fetch_diskless
from tierflow.read.dump_format import batch_line, dump_batch, record_lines
from tierflow.read.fetch import RemoteFetchError
from tierflow.runtime import open_objects, open_storage, open_store

ERRORS = (*KNOWN_ERRORS, DisklessError, MetadataError, RemoteFetchError, ValueError, OSError)


def register(sub: argparse._SubParsersAction) -> None:
    diskless = sub.add_parser(
        "diskless",
        help="diskless topics (KIP-1163): register, produce, fetch, merge, gc, describe",
        description="Diskless topics keep no broker log: batches of many partitions go into "
        "shared WAL objects in the bucket, and the coordinator (in the metadata store) assigns "
        "their offsets.",
    )
    actions = diskless.add_subparsers(dest="diskless_command", required=True, metavar="ACTION")

    reg = actions.add_parser(
        "register",
        help="make a topic diskless (idempotent)",
        description="A new diskless topic is consolidated (remote.storage.enable=true): the "
        "merge moves its older batches into tiered segments. Give --config "
        "remote.storage.enable=false for a topic whose data stays in WAL objects until "
        "retention deletes it. Either way it is fixed once the topic is diskless.",
    )
    reg.add_argument("topic")
    reg.add_argument("--partitions", type=int, required=True)
    reg.add_argument("--topic-id", help="Kafka topic id [the registered one, or a new one]")
    reg.add_argument("--timestamp-type", choices=TIMESTAMP_TYPES, default=TIMESTAMP_TYPES[0])
    reg.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="retention.ms, ..."
    )
    reg.set_defaults(func=register_command)

    produce = actions.add_parser(
        "produce",
        help="produce record batches into a diskless topic",
        description="Each batch of each FILE (a .log segment, or producer batches back to "
        "back) is one produce request for PARTITION. Without files, and with "
        "TIERFLOW_KAFKA_BOOTSTRAP set, reads --source-topic from Kafka instead (untested: see "
        "tierflow.diskless.produce).",
    )
    produce.add_argument("topic")
    produce.add_argument("files", nargs="*", type=Path)
    produce.add_argument("--partition", type=int, default=0)
    produce.add_argument("--source-topic", help="the Kafka topic to read [TOPIC]")
    produce.add_argument("--json", action="store_true")
    produce.set_defaults(func=produce_command)

    fetch = actions.add_parser("fetch", help="read batches through the diskless read path")
    fetch.add_argument("topic")
    fetch.add_argument("--partition", type=int, required=True)
    fetch.add_argument("--offset", type=int, required=True)
    fetch.add_argument("--max-bytes", type=int, default=1 << 20)
    fetch.add_argument("--print-records", action="store_true")
    fetch.add_argument("--output", type=Path, help="write the batches to this file")
    fetch.set_defaults(func=fetch_command)

    merge = actions.add_parser(
        "merge",
        help="merge WAL batches into tiered segments now (what the diskless_merge DAG runs)",
        description="For each partition of the consolidated diskless topics: the batches "
        "committed at least --min-age-ms ago, rolled into segments at --segment-bytes, go "
        "through the copy lifecycle (COPY_SEGMENT_STARTED, upload, verify, FINISHED) and are "
        "then dropped from the WAL. A rerun with the same --owner resumes a killed merge.",
    )
    merge.add_argument("--topic")
    merge.add_argument("--min-age-ms", type=int, default=0, help="[0: everything committed]")
    merge.add_argument("--segment-bytes", type=int, default=KAFKA_SEGMENT_BYTES)
    merge.add_argument("--max-segments", type=int, help="per partition [all]")
    merge.add_argument("--owner", help="lease owner; a rerun with the same owner resumes at once")
    merge.add_argument("--dry-run", action="store_true")
    merge.add_argument("--json", action="store_true")
    merge.set_defaults(func=merge_command)

    desc = actions.add_parser(
        "describe",
        help="diskless topics and WAL objects, like kafka-diskless-metadata.sh",
        description="Per topic: offsets, size on object storage, total size of the WAL "
        "objects holding it, and of those of them also holding deleted batches. With "
        "--objects, per WAL object: key, state, total size and used size.",
    )
    desc.add_argument("--topic")
    desc.add_argument("--objects", action="store_true", help="list the WAL objects too")
    desc.add_argument("--json", action="store_true")
    desc.set_defaults(func=describe_command)

    retention = actions.add_parser("retention", help="apply retention.ms/bytes to the WAL")
    retention.add_argument("--topic")
    retention.set_defaults(func=retention_command)

    gc = actions.add_parser("gc", help="delete WAL objects that are due, from storage")
    gc.set_defaults(func=gc_command)

    demo = actions.add_parser(
        "demo",
        help="produce into diskless topics, read back, merge into tiered storage, collect",
        description="Generate the demo broker log dir under <data>/diskless-demo (replacing "
        "it), register its non-transactional topics as consolidated diskless topics, produce "
        "every batch through WAL objects, fetch every partition back through the diskless "
        "read path and compare it byte for byte with the broker's segments; then merge the "
        "WAL into tiered segments (chunked, compressed, encrypted), fetch again (now from "
        "tiered storage), and garbage-collect the emptied WAL objects.",
    )
    demo.add_argument("--data-dir", type=Path, help="[<data>/diskless-demo]")
    demo.set_defaults(func=demo_command)


def _open(settings: Settings) -> tuple[MetadataStore, DisklessCoordinator]:
    store = open_store(settings)
    return store, DisklessCoordinator.for_store(store)


def register_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store, coordinator = _open(settings)
    now = wall_clock_ms()
    try:
        given = dict(_parse_config(item) for item in args.config)
        existing = {t.name: t for t in store.topics()}.get(args.topic)
        topic_id = args.topic_id or (existing.topic_id if existing else new_kafka_uuid())
        configs = parse_kafka_configs(_consolidated(given, coordinator, existing))
        store.register_topic(args.topic, topic_id, actor=_actor(), now_ms=now, **configs)
        coordinator.register_topic(
            topic_id, args.partitions, now_ms=now, timestamp_type=args.timestamp_type
        )
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    merged = store.topic(args.topic).remote_storage_enable
    console.print(
        f"{args.topic} ({topic_id}): diskless, {args.partitions} partition(s), "
        f"{args.timestamp_type}, "
        + ("merged into tiered storage" if merged else "WAL only (remote.storage.enable=false)")
    )
    return 0


REMOTE_STORAGE_ENABLE = "remote.storage.enable"


def _consolidated(
    given: dict[str, str], coordinator: DisklessCoordinator, existing: Topic | None
) -> dict[str, str]:
    """A topic becoming diskless is consolidated unless told otherwise (Inkless's switch sets
    diskless.enable and remote.storage.enable together); once diskless, neither changes."""
    if existing is not None and coordinator.diskless_topic(existing.topic_id) is not None:
        wanted = given.get(REMOTE_STORAGE_ENABLE)
        if wanted is not None and wanted.lower() != str(existing.remote_storage_enable).lower():
            raise CommandError(
                f"{existing.name} is diskless: its {REMOTE_STORAGE_ENABLE} cannot change "
                "(a consolidated diskless topic stays consolidated, as in Inkless)"
            )
        return given
    return {REMOTE_STORAGE_ENABLE: "true", **given}


def produce_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    _store, coordinator = _open(settings)
    writer = WalWriter(
        coordinator,
        open_objects(settings),
        storage_prefix=settings.storage_prefix,
        buffer_max_bytes=settings.diskless.append_buffer_max_bytes,
        commit_interval_ms=settings.diskless.append_commit_interval_ms,
        writer_id=_actor(),
        keep_results=False,
    )
    try:
        topic_id = coordinator.topic_id_of(args.topic)
        if args.files:
            summary = produce_files(writer, topic_id, args.partition, args.files)
        elif settings.kafka_bootstrap:
            partitions = [log.partition for log in coordinator.logs(topic_id)]
            summary = produce_from_kafka(
                writer,
                bootstrap=settings.kafka_bootstrap,
                source_topic=args.source_topic or args.topic,
                topic_id=topic_id,
                partitions=partitions,
            )
        else:
            raise CommandError("give files of record batches, or set TIERFLOW_KAFKA_BOOTSTRAP")
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    _print_produced(args, writer, summary)
    return 0


def _print_produced(args: argparse.Namespace, writer: WalWriter, summary: ProduceSummary) -> None:
    offsets = summary.offsets()
    if args.json:
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
    ranges = ", ".join(f"{args.topic}-{p}: {a}-{b}" for p, (a, b) in sorted(offsets.items()))
    console.print(
        f"produced {summary.batches} batch(es) in {writer.stats.objects} WAL object(s), "
        f"{writer.stats.bytes:,} bytes; offsets {ranges or '-'}"
    )


def fetch_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store, coordinator = _open(settings)
    try:
        result = fetch_diskless(
            coordinator,
            open_objects(settings),
            args.topic,
            args.partition,
            args.offset,
            max_bytes=args.max_bytes,
            store=store,
            rsm=open_storage(settings),
        )
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    if args.output:
        args.output.write_bytes(b"".join(result.batches))
    position = 0
    for data in result.batches:
        batch = dump_batch(position, data, source=f"{args.topic}-{args.partition}")
        position += len(data)
        console.print(batch_line(batch), highlight=False, soft_wrap=True)
        if args.print_records:
            for line in record_lines(batch, print_payload=True):
                console.print(line, highlight=False, soft_wrap=True)
    tiered = len(result.tiered.batches) if result.tiered else 0
    console.print(
        f"{len(result.batches)} batch(es), offsets {result.first_offset}-"
        f"{result.next_offset - 1}, {tiered} from tiered segments; "
        f"{result.ranged_gets} ranged GET(s) of WAL objects, {result.bytes_read:,} bytes; "
        f"high watermark {result.high_watermark}"
    )
    return 0


def merge_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store, coordinator = _open(settings)
    rsm, objects = open_storage(settings), open_objects(settings)
    options = MergeOptions(
        cutoff_ms=wall_clock_ms() - args.min_age_ms,
        staging_root=settings.data_dir / "diskless-merge",
        delete_grace_ms=settings.diskless.delete_grace_ms,
        segment_bytes=args.segment_bytes,
        max_segments=args.max_segments,
        lease_ttl_s=settings.copy_lease_ttl_s,
    )
    owner = args.owner or _actor()
    try:
        topic_id = coordinator.topic_id_of(args.topic) if args.topic else None
        targets = merge_targets(coordinator, store, topic_id)
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    reports: list[MergeReport] = []
    failures = 0
    for target_topic, partition in targets:
        try:
            reports.append(
                merge_partition(
                    coordinator,
                    store,
                    rsm,
                    objects,
                    target_topic,
                    partition,
                    options,
                    owner=owner,
                    dry_run=args.dry_run,
                )
            )
        except ERRORS as exc:
            failures += 1
            label = f"{store.topic_by_id(target_topic).name}-{partition}"
            console.print(f"[red]{label}: {exc}[/red]", highlight=False)
    if args.json:
        print(json.dumps([r.as_dict() for r in reports]))
    else:
        _print_merged(reports, args.dry_run)
    return 1 if failures else 0


def _print_merged(reports: list[MergeReport], dry_run: bool) -> None:
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
            pending = ", ".join(f"{a}-{b} ({n:,} bytes)" for a, b, n in r.pending) or "nothing"
            console.print(f"{label}: would merge {pending}")
        for s in r.merged:
            console.print(
                f"{label}: merged offsets {s.start_offset}-{s.end_offset} "
                f"({s.size_in_bytes:,} bytes) as {s.segment_id}"
            )
    if not dry_run:
        segments = sum(len(r.merged) for r in reports)
        emptied = sum(len(r.objects_emptied) for r in reports)
        batches = sum(r.dropped_batches + r.healed_batches for r in reports)
        console.print(
            f"merged {segments} segment(s) over {len(reports)} partition(s); {batches} "
            f"batch(es) dropped from the WAL, {emptied} WAL object(s) emptied"
        )


def describe_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store, coordinator = _open(settings)
    try:
        topic_id = coordinator.topic_id_of(args.topic) if args.topic else None
        overview = describe(coordinator, store, topic_id=topic_id)
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    if not args.objects:
        overview.objects = []
    if args.json:
        print(json.dumps(overview.as_dict()))
        return 0
    print_overview(overview, show_objects=args.objects)
    return 0


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
            f"{t.size_on_object_storage:,} B",
            f"{t.objects} / {t.objects_bytes:,} B",
            f"{t.objects_with_deleted_batches} / {t.objects_with_deleted_batches_bytes:,} B "
            f"({t.deleted_bytes_in_objects:,} B deleted)",
            f"{t.tiered_segments} / {t.tiered_bytes:,} B",
        )
    console.print(topics)
    partitions = Table(title="Offsets", box=box.SIMPLE_HEAD)
    for column in ("partition", "log start", "tiered up to", "WAL start", "high watermark"):
        partitions.add_column(column, justify="left" if column == "partition" else "right")
    partitions.add_column("WAL bytes", justify="right")
    for t in overview.topics:
        for p in t.partitions:
            partitions.add_row(
                f"{t.topic}-{p.partition}",
                str(p.log_start_offset),
                "-" if p.tiered_end_offset < 0 else str(p.tiered_end_offset),
                str(p.wal_start_offset),
                str(p.high_watermark),
                f"{p.wal_bytes:,}",
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
                f"{o.total_size:,}",
                f"{o.used_size:,}",
                str(o.batches),
                ", ".join(o.topics),
            )
        console.print(objects)
    console.print(
        f"{overview.awaiting_deletion} emptied WAL object(s), "
        f"{overview.awaiting_deletion_bytes:,} B, awaiting the garbage collector"
    )


def retention_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    _store, coordinator = _open(settings)
    try:
        topic_id = coordinator.topic_id_of(args.topic) if args.topic else None
        deletions = enforce_retention(
            coordinator,
            now_ms=wall_clock_ms(),
            delete_grace_ms=settings.diskless.delete_grace_ms,
            topic_id=topic_id,
        )
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    table = Table(title="Diskless retention", box=box.SIMPLE_HEAD)
    for column in ("partition", "batches", "bytes", "log start", "objects emptied"):
        table.add_column(column)
    for d in deletions:
        table.add_row(
            f"{coordinator.topic_row(d.topic_id).name}-{d.partition}",
            str(d.batches_deleted),
            f"{d.bytes_deleted:,}",
            str(d.log_start_offset),
            str(len(d.objects_marked)),
        )
    console.print(table)
    return 0


def gc_command(_args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    _store, coordinator = _open(settings)
    try:
        report = collect_garbage(
            coordinator,
            open_objects(settings),
            now_ms=wall_clock_ms(),
            uncommitted_grace_ms=settings.diskless.uncommitted_grace_ms,
        )
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    console.print(
        f"deleted {len(report.deleted)} WAL object(s), {report.bytes_deleted:,} bytes "
        f"({len(report.abandoned)} never committed)"
    )
    return 0


def demo_command(args: argparse.Namespace) -> int:
    base = args.data_dir or Settings.from_env().data_dir / "diskless-demo"
    demo = run_diskless_demo(Path(base).resolve(), say=console.print)
    _print_demo(demo)
    return 0 if demo.ok else 1


def _print_demo(demo: DisklessDemo) -> None:
    title = "Diskless topics: produced into WAL objects, read back, merged, read back"
    table = Table(title=title, box=box.SIMPLE_HEAD)
    columns = ("partition", "batches", "bytes", "offsets", "WAL objects", "same")
    for column in (*columns, "segments", "same from tiered"):
        table.add_column(column, no_wrap=True)
    merged = {(r.topic, r.partition): r for r in demo.merged}
    for c, t in zip(demo.checks, demo.tiered_checks, strict=False):
        report = merged.get((c.topic, c.partition))
        table.add_row(
            f"{c.topic}-{c.partition}",
            str(c.batches),
            f"{c.bytes:,}",
            f"{c.first_offset}-{c.next_offset - 1}",
            str(len(c.objects)),
            "yes" if c.identical else "NO",
            str(len(report.merged)) if report else "-",
            "yes" if t.identical and t.tiered_batches == t.batches else "NO",
        )
    console.print(table)
    console.print(
        f"{demo.wal_objects} WAL objects written; {len(demo.gc.deleted)} deleted by the garbage "
        f"collector ({demo.gc.bytes_deleted:,} bytes), {demo.wal_objects_left} left"
    )
    verdict = (
        "every read byte-identical to the broker's segments, before and after the merge"
        if demo.ok
        else "DIFFERENT from the broker, or WAL objects left behind"
    )
    console.print(f"bucket {demo.settings.remote_storage}: {verdict}")


def _actor() -> str:
    return f"cli:{socket.gethostname()}:{os.getpid()}"
