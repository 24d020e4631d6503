"""The work behind ``tierflow diskless ...`` (their options are in ``diskless_commands``):
imported when one of them runs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tierflow.cli.common import (
    CommandError,
    as_command_error,
    cli_actor,
    parse_config,
    print_json,
)
from tierflow.cli.console import data_console
from tierflow.cli.diskless_output import (
    print_demo,
    print_merged,
    print_overview,
    print_produced,
    print_retention,
)
from tierflow.cli.shared import KNOWN_ERRORS, console, each_partition
from tierflow.config import Settings
from tierflow.demo.diskless import run_diskless_demo
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.describe import describe
from tierflow.diskless.errors import DisklessError
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.merge import MergeOptions, MergeReport, merge_partition, merge_targets
from tierflow.diskless.produce import produce_files, produce_from_kafka
from tierflow.diskless.retention import enforce_retention
from tierflow.diskless.writer import WalWriter
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.log_config import parse_kafka_configs
from tierflow.metadata.models import Topic
from tierflow.metadata.store import MetadataStore
from tierflow.read.diskless import DisklessFetchResult, fetch_diskless
from tierflow.read.dump_format import (
    DumpedBatch,
    batch_document,
    batch_line,
    dump_batch,
    record_lines,
)
from tierflow.read.fetch import RemoteFetchError
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.units import counted, human_bytes

ERRORS = (*KNOWN_ERRORS, DisklessError, MetadataError, RemoteFetchError, ValueError, OSError)


def _open() -> tuple[Settings, MetadataStore, DisklessCoordinator]:
    settings = Settings.from_env()
    store = open_store(settings)
    return settings, store, DisklessCoordinator.for_store(store)


def _topic_id(coordinator: DisklessCoordinator, topic: str | None) -> str | None:
    """The id of ``--topic``, or None (every diskless topic) without it."""
    return coordinator.topic_id_of(topic) if topic else None


def register_command(args: argparse.Namespace) -> int:
    _, store, coordinator = _open()
    now = wall_clock_ms()
    with as_command_error(*ERRORS):
        given = dict(parse_config(item) for item in args.config)
        existing = {t.name: t for t in store.topics()}.get(args.topic)
        topic_id = args.topic_id or (existing.topic_id if existing else new_kafka_uuid())
        configs = parse_kafka_configs(_consolidated(given, coordinator, existing))
        store.register_topic(args.topic, topic_id, actor=cli_actor(), now_ms=now, **configs)
        coordinator.register_topic(
            topic_id, args.partitions, now_ms=now, timestamp_type=args.timestamp_type
        )
    merged = store.topic(args.topic).remote_storage_enable
    console.print(
        f"{args.topic} ({topic_id}): diskless, {counted(args.partitions, 'partition')}, "
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
    settings, _store, coordinator = _open()
    writer = WalWriter(
        coordinator,
        open_objects(settings),
        storage_prefix=settings.storage.prefix,
        buffer_max_bytes=settings.diskless.append_buffer_max_bytes,
        commit_interval_ms=settings.diskless.append_commit_interval_ms,
        writer_id=cli_actor(),
        keep_results=False,
    )
    with as_command_error(*ERRORS):
        topic_id = coordinator.topic_id_of(args.topic)
        if args.files:
            summary = produce_files(writer, topic_id, args.partition, args.files)
        elif settings.cluster.bootstrap_servers:
            partitions = [log.partition for log in coordinator.logs(topic_id)]
            summary = produce_from_kafka(
                writer,
                bootstrap=settings.cluster.bootstrap_servers,
                source_topic=args.source_topic or args.topic,
                topic_id=topic_id,
                partitions=partitions,
            )
        else:
            raise CommandError("give files of record batches, or set TIERFLOW_KAFKA_BOOTSTRAP")
    print_produced(args.topic, writer, summary, as_json=args.json)
    return 0


def fetch_command(args: argparse.Namespace) -> int:
    settings, store, coordinator = _open()
    with as_command_error(*ERRORS):
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
    if args.output:
        args.output.write_bytes(b"".join(result.batches))
    source = f"{args.topic}-{args.partition}"
    dumped, position = [], 0
    for data in result.batches:
        dumped.append(dump_batch(position, data, source=source))
        position += len(data)
    if args.json:
        print_json(_fetch_document(result, dumped, args.print_records))
        return 0
    out = data_console()  # keys and payloads print as themselves, never as markup
    for batch in dumped:
        out.print(batch_line(batch))
        if args.print_records:
            for line in record_lines(batch, print_payload=True):
                out.print(line)
    tiered = len(result.tiered.batches) if result.tiered else 0
    console.print(
        f"{counted(len(result.batches), 'batch', 'batches')}, offsets {result.first_offset}-"
        f"{result.next_offset - 1}, {tiered} from tiered segments; "
        f"{counted(result.ranged_gets, 'ranged GET')} of WAL objects, "
        f"{human_bytes(result.bytes_read)}; "
        f"high watermark {result.high_watermark}"
    )
    return 0


def _fetch_document(result: DisklessFetchResult, dumped: list[DumpedBatch], records: bool) -> dict:
    """``diskless fetch --json``: the batches as ``dump-segment --json`` has them."""
    return {
        "first_offset": result.first_offset,
        "next_offset": result.next_offset,
        "high_watermark": result.high_watermark,
        "tiered_batches": len(result.tiered.batches) if result.tiered else 0,
        "ranged_gets": result.ranged_gets,
        "bytes_read": result.bytes_read,
        "batches": [batch_document(b, records=records, payloads=records) for b in dumped],
    }


def merge_command(args: argparse.Namespace) -> int:
    settings, store, coordinator = _open()
    rsm, objects = open_storage(settings), open_objects(settings)
    options = MergeOptions.from_settings(
        settings,
        min_age_ms=args.min_age_ms,
        segment_bytes=args.segment_bytes,
        max_segments=args.max_segments,
        holder=LeaseHolder.this_process(),
    )
    owner = args.owner or cli_actor()
    with as_command_error(*ERRORS):
        topic_id = _topic_id(coordinator, args.topic)
        targets = merge_targets(coordinator, store, topic_id)

    def merge(topic_id: str, partition: int) -> MergeReport:
        return merge_partition(
            coordinator,
            store,
            rsm,
            objects,
            topic_id,
            partition,
            options,
            owner=owner,
            dry_run=args.dry_run,
        )

    def topic_name(topic_id: str) -> str:
        return store.topic_by_id(topic_id).name

    reports, failures = each_partition(targets, merge, topic_name, ERRORS)
    if args.json:
        print(json.dumps([r.as_dict() for r in reports]))
    else:
        print_merged(reports, args.dry_run)
    return 1 if failures else 0


def describe_command(args: argparse.Namespace) -> int:
    _, store, coordinator = _open()
    with as_command_error(*ERRORS):
        topic_id = _topic_id(coordinator, args.topic)
        overview = describe(coordinator, store, topic_id=topic_id)
    if not args.objects:
        overview.objects = []
    if args.json:
        print(json.dumps(overview.as_dict()))
        return 0
    print_overview(overview, show_objects=args.objects)
    return 0


def retention_command(args: argparse.Namespace) -> int:
    settings, _store, coordinator = _open()
    with as_command_error(*ERRORS):
        topic_id = _topic_id(coordinator, args.topic)
        deletions = enforce_retention(
            coordinator,
            now_ms=wall_clock_ms(),
            delete_grace_ms=settings.diskless.delete_grace_ms,
            topic_id=topic_id,
        )
    print_retention(coordinator, deletions)
    return 0


def gc_command(_args: argparse.Namespace) -> int:
    settings, _store, coordinator = _open()
    with as_command_error(*ERRORS):
        report = collect_garbage(
            coordinator,
            open_objects(settings),
            now_ms=wall_clock_ms(),
            uncommitted_grace_ms=settings.diskless.uncommitted_grace_ms,
        )
    console.print(
        f"deleted {counted(len(report.deleted), 'WAL object')}, "
        f"{human_bytes(report.bytes_deleted)} "
        f"({len(report.abandoned)} never committed)"
    )
    return 0


def demo_command(args: argparse.Namespace) -> int:
    base = args.data_dir or Settings.from_env().data_dir / "diskless-demo"
    demo = run_diskless_demo(Path(base).resolve(), say=console.print)
    print_demo(demo)
    return 0 if demo.ok else 1
