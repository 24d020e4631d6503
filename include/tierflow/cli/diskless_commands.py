"""``tierflow diskless``: diskless topics (KIP-1163) by hand.

``register`` makes a topic diskless, ``produce`` writes record batches into WAL objects through
the coordinator, ``fetch`` reads them back through the diskless read path (continuing from
tiered segments), ``merge``, ``retention`` and ``gc`` run what the diskless_merge and
diskless_gc DAGs schedule, and ``describe`` is KIP-1163's kafka-diskless-metadata.sh.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tierflow.cli.commands import KNOWN_ERRORS, console
from tierflow.cli.common import (
    CommandError,
    as_command_error,
    cli_actor,
    parse_config,
    partition_failed,
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
from tierflow.cli.spec import (
    OWNER,
    Command,
    Group,
    add_commands,
    arg,
    config_option,
    flag,
    partition_option,
)
from tierflow.config import Settings
from tierflow.demo.diskless import run_diskless_demo
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.describe import describe
from tierflow.diskless.errors import DisklessError
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.merge import MergeOptions, MergeReport, merge_partition, merge_targets
from tierflow.diskless.merge_plan import KAFKA_SEGMENT_BYTES
from tierflow.diskless.models import TIMESTAMP_TYPES
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
from tierflow.units import counted, error_line, human_bytes

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
        storage_prefix=settings.storage_prefix,
        buffer_max_bytes=settings.diskless.append_buffer_max_bytes,
        commit_interval_ms=settings.diskless.append_commit_interval_ms,
        writer_id=cli_actor(),
        keep_results=False,
    )
    with as_command_error(*ERRORS):
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
            partition_failed(f"{store.topic_by_id(target_topic).name}-{partition}", error_line(exc))
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


# -- the commands --------------------------------------------------------------------------

ACTIONS = (
    Command(
        "register",
        register_command,
        help="make a topic diskless (idempotent)",
        description="A new diskless topic is consolidated (remote.storage.enable=true): the "
        "merge moves its older batches into tiered segments. Give --config "
        "remote.storage.enable=false for a topic whose data stays in WAL objects until "
        "retention deletes it. Either way it is fixed once the topic is diskless.",
        args=(
            arg("topic", help="the diskless topic's name"),
            arg("--partitions", type=int, required=True, help="its number of partitions"),
            arg("--topic-id", help="Kafka topic id [the registered one, or a new one]"),
            arg(
                "--timestamp-type",
                choices=TIMESTAMP_TYPES,
                default=TIMESTAMP_TYPES[0],
                help=f"message.timestamp.type of the topic [{TIMESTAMP_TYPES[0]}]",
            ),
            config_option("retention.ms, ..."),
        ),
    ),
    Command(
        "produce",
        produce_command,
        help="produce record batches into a diskless topic",
        description="Each batch of each FILE (a .log segment, or producer batches back to "
        "back) is one produce request for PARTITION. Without files, and with "
        "TIERFLOW_KAFKA_BOOTSTRAP set, reads --source-topic from Kafka instead (untested: see "
        "tierflow.diskless.produce).",
        args=(
            arg("topic", help="the diskless topic to produce into"),
            arg("files", nargs="*", type=Path, help="files of record batches (.log segments)"),
            partition_option("the partition to produce into [0]", default=0),
            arg("--source-topic", help="the Kafka topic to read [TOPIC]"),
            flag("--json", "print the objects, batches, bytes and offsets as JSON"),
        ),
        trailing="files",
    ),
    Command(
        "fetch",
        fetch_command,
        help="read batches through the diskless read path",
        description="Read a diskless partition from an offset: from tiered segments below "
        "the WAL start, then from WAL objects with one ranged GET per contiguous run, offsets "
        "injected as the broker would. Prints each batch like kafka-dump-log.",
        args=(
            arg("topic", help="the diskless topic"),
            partition_option("the partition", required=True),
            arg("--offset", type=int, required=True, help="start at the batch holding it"),
            arg(
                "--max-bytes",
                type=int,
                default=1 << 20,
                help="stop before a batch past this size; the first is whole [1048576]",
            ),
            flag("--print-records", "also print every record with its key and payload"),
            arg("--output", type=Path, help="write the batches to this file"),
            flag("--json", "print the batches as JSON (records in base64 with --print-records)"),
        ),
    ),
    Command(
        "merge",
        merge_command,
        help="merge WAL batches into tiered segments now (what the diskless_merge DAG runs)",
        description="For each partition of the consolidated diskless topics: the batches "
        "committed at least --min-age-ms ago, rolled into segments at --segment-bytes, go "
        "through the copy lifecycle (COPY_SEGMENT_STARTED, upload, verify, FINISHED) and are "
        "then dropped from the WAL. A plain rerun on this host resumes a killed or interrupted "
        "merge (it takes over the lease of a run whose process is gone), as does a rerun with "
        "the same --owner. A partition whose lease another run holds is named on stderr with "
        "who holds it and until when; the others go on (exit 1).",
        args=(
            arg("--topic", help="only this topic [every consolidated diskless topic]"),
            arg(
                "--min-age-ms",
                type=int,
                default=0,
                help="merge only batches committed this long ago [0: everything committed]",
            ),
            arg(
                "--segment-bytes",
                type=int,
                default=KAFKA_SEGMENT_BYTES,
                help=f"roll merged segments at this size (segment.bytes) [{KAFKA_SEGMENT_BYTES}]",
            ),
            arg("--max-segments", type=int, help="per partition [all]"),
            OWNER,
            flag("--dry-run", "list what would be merged; write nothing"),
            flag("--json", "print each partition's merge report as JSON"),
        ),
    ),
    Command(
        "describe",
        describe_command,
        help="diskless topics and WAL objects, like kafka-diskless-metadata.sh",
        description="Per topic: offsets, size on object storage, total size of the WAL "
        "objects holding it, and of those of them also holding deleted batches. With "
        "--objects, per WAL object: key, state, total size and used size.",
        args=(
            arg("--topic", help="only this topic [every diskless topic]"),
            flag("--objects", "list the WAL objects too"),
            flag("--json", "print the overview as JSON (sizes in exact bytes)"),
        ),
    ),
    Command(
        "retention",
        retention_command,
        help="apply retention.ms/bytes to the WAL",
        description="Delete each diskless partition's batches past retention.ms or "
        "retention.bytes (logically: their WAL objects' used size shrinks), and carry remote "
        "retention's log start over to the diskless log. What the diskless_gc DAG does first.",
        args=(arg("--topic", help="only this topic [every diskless topic]"),),
    ),
    Command(
        "gc",
        gc_command,
        help="delete WAL objects that are due, from storage",
        description="Delete every WAL object emptied longer than "
        "TIERFLOW_DISKLESS_DELETE_GRACE_MS ago and every object never committed within "
        "TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS; rows go only once storage confirmed.",
    ),
    Command(
        "demo",
        demo_command,
        help="produce into diskless topics, read back, merge into tiered storage, collect",
        description="Generate the demo broker log dir under <data>/diskless-demo (replacing "
        "it), register its non-transactional topics as consolidated diskless topics, produce "
        "every batch through WAL objects, fetch every partition back through the diskless "
        "read path and compare it byte for byte with the broker's segments; then merge the "
        "WAL into tiered segments (chunked, compressed, encrypted), fetch again (now from "
        "tiered storage), and garbage-collect the emptied WAL objects.",
        args=(arg("--data-dir", type=Path, help="[<data>/diskless-demo]"),),
    ),
)

DISKLESS = Group(
    "diskless",
    help="diskless topics (KIP-1163): register, produce, fetch, merge, gc, describe",
    description="Diskless topics keep no broker log: batches of many partitions go into "
    "shared WAL objects in the bucket, and the coordinator (in the metadata store) assigns "
    "their offsets.",
    dest="diskless_command",
    commands=ACTIONS,
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``diskless`` to the ``tierflow`` command."""
    add_commands(sub, (DISKLESS,))
