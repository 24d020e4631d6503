"""``tierflow diskless``: diskless topics (KIP-1163) by hand.

``register`` makes a topic diskless, ``produce`` writes record batches into WAL objects through
the coordinator, ``fetch`` reads them back through the diskless read path (continuing from
tiered segments), ``retention`` and ``gc`` run what the diskless DAGs will schedule.
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
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.demo import run_diskless_demo
from tierflow.diskless.errors import DisklessError
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.models import TIMESTAMP_TYPES
from tierflow.diskless.produce import ProduceSummary, produce_files, produce_from_kafka
from tierflow.diskless.read import fetch_diskless
from tierflow.diskless.retention import enforce_retention
from tierflow.diskless.writer import WalWriter
from tierflow.fetch import RemoteFetchError
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.log_config import parse_kafka_configs
from tierflow.metadata.store import MetadataStore
from tierflow.read.dump_format import batch_line, dump_batch, record_lines
from tierflow.runtime import open_objects, open_storage, open_store

ERRORS = (*KNOWN_ERRORS, DisklessError, MetadataError, RemoteFetchError, ValueError, OSError)


def register(sub: argparse._SubParsersAction) -> None:
    diskless = sub.add_parser(
        "diskless",
        help="diskless topics (KIP-1163): register, produce, fetch, retention, gc",
        description="Diskless topics keep no broker log: batches of many partitions go into "
        "shared WAL objects in the bucket, and the coordinator (in the metadata store) assigns "
        "their offsets.",
    )
    actions = diskless.add_subparsers(dest="diskless_command", required=True, metavar="ACTION")

    reg = actions.add_parser("register", help="make a topic diskless (idempotent)")
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

    retention = actions.add_parser("retention", help="apply retention.ms/bytes to the WAL")
    retention.add_argument("--topic")
    retention.set_defaults(func=retention_command)

    gc = actions.add_parser("gc", help="delete WAL objects that are due, from storage")
    gc.set_defaults(func=gc_command)

    demo = actions.add_parser(
        "demo",
        help="produce the demo's broker logs into diskless topics and read them back",
        description="Generate the demo broker log dir under <data>/diskless-demo (replacing "
        "it), register its non-transactional topics as diskless, produce every batch through "
        "WAL objects, fetch every partition back through the diskless read path and compare "
        "it byte for byte with the broker's segments.",
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
        configs = parse_kafka_configs(dict(_parse_config(item) for item in args.config))
        existing = {t.name: t for t in store.topics()}.get(args.topic)
        topic_id = args.topic_id or (existing.topic_id if existing else new_kafka_uuid())
        store.register_topic(args.topic, topic_id, actor=_actor(), now_ms=now, **configs)
        coordinator.register_topic(
            topic_id, args.partitions, now_ms=now, timestamp_type=args.timestamp_type
        )
    except ERRORS as exc:
        raise CommandError(str(exc)) from exc
    console.print(
        f"{args.topic} ({topic_id}): diskless, {args.partitions} partition(s), "
        f"{args.timestamp_type}"
    )
    return 0


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
    demo = run_diskless_demo(Path(base).resolve())
    title = "Diskless topics: produced through WAL objects, read back"
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for column in ("partition", "batches", "bytes", "offsets", "WAL objects read", "identical"):
        table.add_column(column)
    for c in demo.checks:
        table.add_row(
            f"{c.topic}-{c.partition}",
            str(c.batches),
            f"{c.bytes:,}",
            f"{c.first_offset}-{c.next_offset - 1}",
            str(len(c.objects)),
            "yes" if c.identical else "NO",
        )
    console.print(table)
    verdict = "byte-identical to the broker's segments" if demo.ok else "DIFFERENT from the broker"
    console.print(f"{demo.wal_objects} WAL objects in {demo.settings.remote_storage}; {verdict}")
    return 0 if demo.ok else 1


def _actor() -> str:
    return f"cli:{socket.gethostname()}:{os.getpid()}"
