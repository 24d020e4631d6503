"""The work behind ``fetch``, ``dump-segment`` and ``metadata`` (their options are in
``fetch_commands``): imported when one of them runs."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from tierflow.cli.common import CommandError, as_command_error, print_json, stream_json
from tierflow.cli.console import data_console, stderr_console, stdout_console
from tierflow.cluster.leaders import leader_log
from tierflow.config import Settings
from tierflow.kafka.errors import ClusterMetadataError, KafkaFormatError
from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.record_batch import iter_batch_frames
from tierflow.metadata.errors import MetadataError, UnknownSegmentError, UnknownTopicError
from tierflow.metadata.models import Partition, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.read.dump_format import (
    DumpedBatch,
    batch_document,
    batch_line,
    dump_batch,
    record_lines,
)
from tierflow.read.fetch import FetchRequest, FetchResult, RemoteFetchError, fetch_remote
from tierflow.read.index_cache import open_index_cache
from tierflow.read.metadata_cache import RemoteLogMetadataCache
from tierflow.rsm import RemoteStorageError
from tierflow.runtime import UnknownPartitionError, open_storage, open_store
from tierflow.segment_refs import remote_segment
from tierflow.units import human_bytes, iso_utc

_READ_CHUNK = 1024 * 1024
_ERRORS = (
    RemoteFetchError,
    KafkaFormatError,
    MetadataError,
    RemoteStorageError,
    FileNotFoundError,
)


# -- fetch ---------------------------------------------------------------------------------


def fetch_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    store, rsm = open_store(settings), open_storage(settings)
    epochs, log_end = _leader_epochs(settings, args.topic, args.partition, args.epochs)
    with as_command_error(*_ERRORS, ValueError):
        with _status(f"fetching {args.topic}-{args.partition} from remote storage"):
            result = fetch_remote(
                store,
                rsm,
                FetchRequest(
                    args.topic, args.partition, args.offset, args.timestamp, args.max_bytes
                ),
                leader_epochs=epochs,
                log_end_offset=log_end,
                index_cache=open_index_cache(settings),
            )
        if args.json:
            print_json(_fetch_document(result, args.print_records))
        else:
            _print_fetch(result, args)
    return 0


def _print_fetch(result: FetchResult, args: argparse.Namespace) -> None:
    out = data_console()
    if result.timestamp_match is not None:
        match = result.timestamp_match
        out.print(
            f"timestamp {args.timestamp}: first record at offset {match.offset} "
            f"(timestamp {match.timestamp}, leader epoch {match.leader_epoch})"
        )
    for batch in result.found:
        dumped = dump_batch(batch.header.position, batch.data, source=batch.segment_id)
        out.print(f"segment: {batch.segment_id} {batch_line(dumped)}")
        if args.print_records:
            for line in record_lines(dumped, print_payload=True):
                out.print(line)
    out.print(
        f"{len(result.batches)} batches ({human_bytes(result.size_in_bytes)}), offsets "
        f"{result.first_offset}-{result.next_offset - 1}, next offset {result.next_offset}; "
        f"segments read: {', '.join(result.segments_read)}; "
        f"remote bytes read: {human_bytes(result.remote_bytes_read)}"
    )


def _fetch_document(result: FetchResult, records: bool) -> dict:
    """``fetch --json``: the batches as dump-segment --json has them, each with its segment."""
    match = result.timestamp_match
    return {
        "topic": result.topic,
        "partition": result.partition,
        "timestamp_match": None if match is None else dataclasses.asdict(match),
        "first_offset": result.first_offset,
        "next_offset": result.next_offset,
        "size_bytes": result.size_in_bytes,
        "segments_read": result.segments_read,
        "remote_bytes_read": result.remote_bytes_read,
        "batches": [
            {
                "segment_id": batch.segment_id,
                **batch_document(
                    dump_batch(batch.header.position, batch.data, source=batch.segment_id),
                    records=records,
                    payloads=records,
                ),
            }
            for batch in result.found
        ],
    }


def _leader_epochs(
    settings: Settings, topic: str, partition: int, source: str
) -> tuple[list[EpochEntry] | None, int | None]:
    """The broker's leader-epoch cache and log end offset, when asked for or available."""
    if source == "remote":
        return None, None
    log_ = _partition_log(settings, topic, partition)
    if log_ is None:
        if source == "log":
            dirs = ", ".join(str(p) for p in settings.log_dirs)
            raise CommandError(f"--epochs log: no directory {topic}-{partition} in {dirs}")
        return None, None
    entries = log_.leader_epoch_entries()
    if not entries:
        if source == "log":
            raise CommandError(f"--epochs log: {log_.path} has no leader-epoch-checkpoint")
        return None, None
    return entries, log_.log_end_offset()


def _partition_log(settings: Settings, topic: str, partition: int) -> PartitionLog | None:
    """The partition's leader replica (tierflow.cluster), when it can be found here."""
    try:
        return leader_log(settings, topic, partition).log
    except (UnknownPartitionError, KafkaFormatError, ValueError, ClusterMetadataError):
        return None


# -- dump-segment ----------------------------------------------------------------------------


def dump_segment_command(args: argparse.Namespace) -> int:
    if (args.path is None) == (args.segment_id is None):
        raise CommandError("give either a local .log path or --segment-id, not both or neither")
    deep = args.deep_iteration or args.print_records
    with as_command_error(*_ERRORS):
        if args.path is not None:
            source, start, size, chunks = _local_segment(args.path)
        else:
            source, start, size, chunks = _remote_segment(args)
        batches = (
            dump_batch(position, data, source=source)
            for position, data in iter_batch_frames(_with_progress(chunks, size), source=source)
        )
        if args.json:
            documents = (
                batch_document(b, records=deep, payloads=args.print_records) for b in batches
            )
            stream_json({"source": source, "log_start_offset": start}, "batches", documents)
        else:
            _print_dump(source, start, batches, deep, args.print_records)
    return 0


def _print_dump(
    source: str, start: int, batches: Iterable[DumpedBatch], deep: bool, payloads: bool
) -> None:
    out = data_console()
    out.print(f"Dumping {source}")
    out.print(f"Log starting offset: {start}")
    for dumped in batches:
        out.print(batch_line(dumped))
        if deep:
            for line in record_lines(dumped, print_payload=payloads):
                out.print(line)


def _local_segment(path: Path) -> tuple[str, int, int, Iterator[bytes]]:
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    name = path.name
    start = int(name[:20]) if name[:20].isdigit() else 0

    def chunks() -> Iterator[bytes]:
        with open(path, "rb") as handle:
            yield from iter(lambda: handle.read(_READ_CHUNK), b"")

    return str(path), start, path.stat().st_size, chunks()


def _remote_segment(args: argparse.Namespace) -> tuple[str, int, int, Iterator[bytes]]:
    settings = Settings.from_env()
    store = open_store(settings)
    try:
        row = store.segment(args.segment_id)
    except UnknownSegmentError as exc:
        raise CommandError(f"no remote segment {args.segment_id!r} in the metadata store") from exc
    topic = store.topic_by_id(row.topic_id)
    if args.topic is not None and args.topic != topic.name:
        raise CommandError(
            f"segment {row.segment_id} belongs to topic {topic.name}, not {args.topic}"
        )
    if args.partition is not None and args.partition != row.partition:
        raise CommandError(
            f"segment {row.segment_id} belongs to partition {row.partition}, not {args.partition}"
        )
    if row.segment_state is not RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
        _err().print(
            f"warning: segment {row.segment_id} is {row.state}; its data may be incomplete"
        )
    ref = remote_segment(topic, row)
    rsm = open_storage(settings)
    return ref.describe(), row.start_offset, row.segment_size_bytes, iter(rsm.iter_log_segment(ref))


def _with_progress(chunks: Iterator[bytes], total: int) -> Iterator[bytes]:
    """Download/read progress on stderr (only on a terminal; stdout stays clean)."""
    progress = Progress(
        TextColumn("reading"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=_err(),
        transient=True,
        disable=not sys.stderr.isatty(),
    )
    with progress:
        task = progress.add_task("segment", total=total)
        for chunk in chunks:
            progress.advance(task, len(chunk))
            yield chunk


# -- metadata ------------------------------------------------------------------------------


def metadata_command(args: argparse.Namespace) -> int:
    store = open_store(Settings.from_env())
    with as_command_error(UnknownTopicError):
        topics = [store.topic(args.topic)] if args.topic else store.topics()
    partitions = [
        (topic, part)
        for topic in topics
        for part in store.partitions(topic.topic_id)
        if args.partition is None or part.partition == args.partition
    ]
    if args.topic and args.partition is not None and not partitions:
        raise CommandError(f"{args.topic}-{args.partition} has no remote metadata")
    states = set(args.state or [])
    reports = [
        _partition_report(store, topic, part, states)
        for topic, part in _progress_over(partitions, "reading metadata")
    ]
    if args.json:
        print_json(reports)
        return 0
    out = stdout_console(soft_wrap=True)
    if not reports:
        out.print("no partitions with remote metadata")
    for report in reports:
        out.print(_partition_table(report))
    return 0


def _partition_report(
    store: MetadataStore, topic: Topic, part: Partition, states: set[str]
) -> dict:
    cache = RemoteLogMetadataCache.load(store, topic.topic_id, part.partition)
    rows = store.segments(topic.topic_id, part.partition)
    return {
        "topic": topic.name,
        "topic_id": topic.topic_id,
        "partition": part.partition,
        "log_start_offset": part.log_start_offset,
        "local_log_start_offset": part.local_log_start_offset,
        "highest_remote_offset": part.highest_remote_offset,
        "segments": [
            _segment_report(row, cache) for row in rows if not states or row.state in states
        ],
    }


def _segment_report(row: RemoteLogSegment, cache: RemoteLogMetadataCache) -> dict:
    return {
        "segment_id": row.segment_id,
        "start_offset": row.start_offset,
        "end_offset": row.end_offset,
        "leader_epochs": [[epoch, start] for epoch, start in row.leader_epochs],
        "size_bytes": row.segment_size_bytes,
        "state": row.state,
        "referenced": cache.is_referenced(row.segment_id),
        "tiered_epoch": row.tiered_epoch,
        "max_timestamp_ms": row.max_timestamp_ms,
        "event_timestamp_ms": row.event_timestamp_ms,
        "owner": row.owner,
    }


def _partition_table(report: dict) -> Table:
    title = (
        f"{report['topic']}-{report['partition']}  log start {report['log_start_offset']}, "
        f"local log start {report['local_log_start_offset']}, "
        f"highest remote offset {report['highest_remote_offset']}"
    )
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for column, justify in (
        ("segment id", "left"),
        ("start", "right"),
        ("end", "right"),
        ("epochs (epoch@start)", "left"),
        ("size", "right"),
        ("state", "left"),
        ("ref", "left"),
        ("tiered epoch", "right"),
        ("event time (UTC)", "left"),
    ):
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for seg in report["segments"]:
        table.add_row(
            seg["segment_id"],
            str(seg["start_offset"]),
            str(seg["end_offset"]),
            ",".join(f"{epoch}@{start}" for epoch, start in seg["leader_epochs"]),
            human_bytes(seg["size_bytes"]),
            seg["state"],
            "yes" if seg["referenced"] else "no",
            str(seg["tiered_epoch"]),
            iso_utc(seg["event_timestamp_ms"]),
        )
    if not report["segments"]:
        table.add_row("(no segments)", *[""] * 8)
    return table


# -- output ----------------------------------------------------------------------------------


def _err() -> Console:
    return stderr_console()


@contextmanager
def _status(message: str) -> Iterator[None]:
    if sys.stderr.isatty():
        with _err().status(message):
            yield
    else:
        yield


def _progress_over(items: list, description: str) -> Iterable:
    if len(items) < 2 or not sys.stderr.isatty():
        return items
    return _tracked(items, description)


def _tracked(items: list, description: str) -> Iterator:
    with Progress(console=_err(), transient=True) as progress:
        yield from progress.track(items, description=description)
