"""Helper, not a benchmark: a topic of broker-shaped segments (big_segments' templates),
tiered by tierflow's copy into the chunked layout (4 MiB chunks, zstd + AES-256-GCM), for the
benchmarks that read tiered data back (restore_throughput.py, iceberg_export.py,
remote_compaction.py)."""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from pathlib import Path

from big_segments import (
    SMALL_ACTIVE_BYTES,
    BatchTemplates,
    BuiltPartition,
    build_partition,
    build_templates,
)

from tierflow.config import Settings
from tierflow.engine.worker import Worker
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.copy.batch import BatchCopy, copy_partitions
from tierflow.lifecycle.copy.rewrite import rewrite_jobs
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_storage, open_store, partition_logs
from tierflow.transform.keyring import KeyRing

MIB = 1 << 20
CHUNK = 4 * MIB


def tiered_arguments(
    description: str, what: str, gib: float = 1.0, cores: str = "Spark local[N]"
) -> ArgumentParser:
    """The options of every benchmark over a tiered topic: its size and shape, and the cores;
    ``what`` says what the benchmark does with the data, ``cores`` what the cores are for."""
    parser = ArgumentParser(description=description)
    parser.add_argument("--gib", type=float, default=gib, help=f"{what}, in GiB")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--segment-mib", type=int, default=64, help="segment.bytes in MiB")
    parser.add_argument("--cores", type=int, default=2, help=cores)
    return parser


def tiered_settings(base: Path) -> Settings:
    ring = KeyRing.generate(base / "keys", "bench")
    return Settings.embedded(
        base, storage_layout="chunked", keyring=ring.path, chunk_size=CHUNK, compression=True
    )


def build_topic(
    settings: Settings,
    topic: str,
    partitions: int,
    segment_bytes: int,
    segments: int,
    templates: BatchTemplates | None = None,
    active_bytes: int = SMALL_ACTIVE_BYTES,
) -> list[BuiltPartition]:
    """The topic's partitions written as a broker would, registered for tiering."""
    templates, topic_id = templates or build_templates(), new_kafka_uuid()
    built = [
        build_partition(
            settings.log_dirs[0],
            topic=topic,
            partition=p,
            segment_bytes=segment_bytes,
            segments=segments,
            active_bytes=active_bytes,
            templates=templates,
            topic_id=topic_id,
        )
        for p in range(partitions)
    ]
    store = open_store(settings)
    store.register_topic(topic, topic_id, actor="bench", now_ms=0, remote_storage_enable=True)
    return built


def tier(settings: Settings, store: MetadataStore, rsm: RemoteStorageManager, cores: int) -> None:
    """tierflow copy's path: every rolled segment FINISHED in the bucket."""

    def rewrite(jobs, progress):
        return rewrite_jobs(jobs, Worker(settings), workers=cores, progress=progress)

    how = BatchCopy(owner="bench", lease_ttl_s=3600, rewrite=rewrite)
    outcomes = copy_partitions(partition_logs(settings.log_dirs), store, rsm, how)
    failed = [o.error for o in outcomes if o.error]
    if failed:
        raise RuntimeError(f"copy failed: {failed[0]}")


def tiered_topic(
    settings: Settings, topic: str, args: Namespace, templates: BatchTemplates | None = None
) -> tuple[list[BuiltPartition], MetadataStore, RemoteStorageManager]:
    """``args.gib`` GiB in ``args.partitions`` partitions of ``args.segment_mib`` MiB segments,
    written and tiered, as each benchmark's set-up; says what it is doing, as it takes a while."""
    segments = max(1, int(args.gib * 1024 / args.segment_mib / args.partitions))
    print(f"writing {args.partitions} x {segments} segments of {args.segment_mib} MiB ...")
    size = args.segment_mib * MIB
    built = build_topic(settings, topic, args.partitions, size, segments, templates)
    store, rsm = open_store(settings), open_storage(settings)
    print("tiering them (zstd + AES-256-GCM, 4 MiB chunks) ...", flush=True)
    tier(settings, store, rsm, args.cores)
    return built, store, rsm
