"""How fast Spark merges diskless WAL batches into tiered segments, against a copy ceiling.

Data: ``--mib`` MiB of producer batches (uncompressed JSON, about 16 KiB each: big_segments'
templates) produced through the WAL writer into 8 MiB WAL objects, round-robin over
``--partitions`` partitions, then planned by ``prepare_merge`` (COPY_SEGMENT_STARTED, segments
rolled at ``--segment-mib``) exactly as the diskless_merge DAG does.

Four Spark ``local[2]`` jobs then run over the same plan, one Spark task per partition, as
``spark_apps/merge_wal_segments.py`` submits them:

1. the plain layout's ceiling: the same ranged GETs of the same WAL objects, the bytes written
   unchanged to one file per segment (write + fsync): reading and writing the same bytes;
2. the chunked layout's ceiling: the same, each 4 MiB chunk compressed and encrypted on the
   way (zstd + AES-256-GCM), as the chunked layout must;
3. the merge into the plain layout: CRC check, offset injection, .index/.timeindex/snapshot
   built on the way, upload with sha256 and fsync, each byte written once;
4. the merge into the chunked layout (4 MiB chunks, zstd + AES-256-GCM), the default.

Each merge is compared with its own layout's ceiling; the issue's goal is 70 %.

MiB/s = WAL batch bytes merged / seconds of the timed collect() (Spark's start-up and a
warm-up job excluded). Prepare and finalize (verify every object, FINISHED, drop the batches
from the WAL) are timed too: they are Airflow's part.

Run: .venv/bin/python benchmarks/diskless_merge.py [--mib 512] [--partitions 4]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from big_segments import build_templates
from local_spark import local_spark, timed_collect, warm

from tierflow.config import Settings
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.merge import MergeOptions, MergePlan, finalize_merge, prepare_merge
from tierflow.diskless.merge_job import WAL_MERGE, MergeJob
from tierflow.diskless.wal_reads import runs
from tierflow.diskless.writer import WalWriter
from tierflow.engine.kind import run_rows
from tierflow.engine.worker import Worker
from tierflow.lifecycle.copy.rewrite import RewriteResult
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.storage.factory import settings_object_store
from tierflow.storage.object_store import ObjectStore
from tierflow.transform.chunking import rechunk
from tierflow.transform.encryption import DataKey
from tierflow.transform.keyring import KeyRing
from tierflow.transform.pipeline import ChunkTransform

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIB = 1 << 20
TOPIC, TOPIC_ID = "bench", "b2Dq7iPXQfSdD0wL4RZ0NA"
OWNER = "bench:diskless_merge"
GOAL = 0.7  # the goal: each merge at 70 % of its layout's ceiling


def produce(settings: Settings, coordinator: DisklessCoordinator, mib: int, partitions: int) -> int:
    """WAL objects holding ``mib`` MiB of batches, committed an hour ago; their byte count."""
    templates = build_templates()
    committed = int(time.time() * 1000) - 3_600_000
    writer = WalWriter(
        coordinator,
        open_objects(settings),
        buffer_max_bytes=8 * MIB,
        commit_interval_ms=1 << 40,
        writer_id="bench",
        clock=lambda: committed,
        keep_results=False,
    )
    produced = n = 0
    while produced < mib * MIB:
        # Each partition cycles through every template (about 4.5 MiB, longer than zstd's
        # window), so its segments compress like fresh producer data.
        i = (n // partitions + (n % partitions) * 97) % len(templates)
        start = templates.positions[i]
        batch = bytes(templates.data[start : start + templates.sizes[i]])
        writer.append(TOPIC_ID, n % partitions, batch)
        writer.poll()
        produced += len(batch)
        n += 1
    writer.flush()
    return produced


def ceiling_copy(settings: Settings, rows: Iterable[dict], *, transform: bool) -> Iterator[int]:
    """A ceiling: each segment's ranged GETs written to a file, fsynced; with ``transform``,
    cut into the settings' chunks, each compressed and encrypted on the way."""
    objects = settings_object_store(settings)
    target = settings.data_dir / "ceiling"
    target.mkdir(exist_ok=True)
    for row in rows:
        for segment in MergeJob.from_dict(row).segments:
            path = target / f"{segment.rewrite.segment_id}.log"
            chunks = ranged_gets(objects, segment.batches)
            if transform:
                forward = ChunkTransform(compression=True, data_key=DataKey.generate()).forward
                chunks = (forward(c) for c in rechunk(chunks, settings.storage.chunk_size))
            with open(path, "wb") as out:
                for chunk in chunks:
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            path.unlink()
            yield sum(b.byte_end - b.byte_offset for b in segment.batches)


def ranged_gets(objects: ObjectStore, batches: Iterable) -> Iterator[bytes]:
    for run in runs(list(batches)):
        first, last = run[0], run[-1]
        yield objects.read_range(first.object_key, first.byte_offset, last.byte_end)


def timed_spark(spark: SparkSession, rows: list[dict], work: Callable) -> tuple[float, list]:
    warm(spark, work)
    os.sync()
    return timed_collect(spark, rows, work)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512, help="WAL data to merge, in MiB")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--segment-mib", type=int, default=64, help="segment.bytes in MiB")
    parser.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    return parser.parse_args()


def layouts(base: Path) -> tuple[Settings, Settings]:
    """The plain layout, and the chunked one with 4 MiB chunks, zstd and AES-256-GCM."""
    ring = KeyRing.generate(base / "keys", "bench")
    plain = Settings.embedded(base, storage_layout="plain", storage_prefix="plain/")
    chunked = plain.updated(storage_layout="chunked", storage_prefix="chunked/")
    return plain, chunked.updated(keyring=ring.path, chunk_size=4 * MIB, compression=True)


def spark_jobs(cores: int, rows: list[dict], plain: Settings, chunked: Settings) -> dict:
    """Seconds of each job, and the chunked merge's results (finalized afterwards)."""
    spark = local_spark(cores, "tierflow-diskless-merge-benchmark")
    timed: dict = {}
    try:
        jobs: list[tuple[str, Callable]] = [
            ("ceiling, plain", lambda part: ceiling_copy(plain, part, transform=False)),
            ("ceiling, zstd+AES", lambda part: ceiling_copy(chunked, part, transform=True)),
            ("merge, plain", lambda part: run_rows(WAL_MERGE, Worker(plain), part)),
            ("merge, zstd+AES", lambda part: run_rows(WAL_MERGE, Worker(chunked), part)),
        ]
        for label, work in jobs:
            print(f"{label} ...", flush=True)
            timed[label] = timed_spark(spark, rows, work)
    finally:
        spark.stop()
    failed = [r["error"] for label in timed if label.startswith("merge") for r in timed[label][1]]
    if any(failed):
        raise RuntimeError(f"failed: {[e for e in failed if e][:2]}")
    return timed


def main() -> None:
    args = arguments()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        base = Path(tmp)
        plain, chunked = layouts(base)
        store = open_store(plain)
        store.register_topic(TOPIC, TOPIC_ID, actor="bench", now_ms=0, remote_storage_enable=True)
        coordinator = DisklessCoordinator.for_store(store)
        coordinator.register_topic(TOPIC_ID, args.partitions, now_ms=0)
        print(f"producing {args.mib} MiB into WAL objects ...", flush=True)
        size = produce(plain, coordinator, args.mib, args.partitions)
        objects = len(coordinator.wal_objects())
        options = MergeOptions(
            cutoff_ms=int(time.time() * 1000),
            delete_grace_ms=60_000,
            segment_bytes=args.segment_mib * MIB,
        )
        rsm = open_storage(chunked)
        started = time.perf_counter()
        plans = [
            prepare_merge(coordinator, store, rsm, TOPIC_ID, p, options, owner=OWNER)
            for p in range(args.partitions)
        ]
        prepare_s = time.perf_counter() - started
        rows = [plan.job.as_dict() for plan in plans if plan.job]
        timed = spark_jobs(args.cores, rows, plain, chunked)
        for label in ("ceiling, plain", "ceiling, zstd+AES"):
            if sum(timed[label][1]) != size:
                raise RuntimeError(f"{label} copied {sum(timed[label][1])} of {size} bytes")
        results = timed["merge, zstd+AES"][1]
        started = time.perf_counter()
        finalize(plans, results, coordinator, store, rsm, options)
        finalize_s = time.perf_counter() - started
        stored = sum(o["size"] for r in results for o in r["objects"])
        left = coordinator.log(TOPIC_ID, 0).diskless_start_offset
    segments = sum(len(plan.copy.jobs) for plan in plans)
    print()
    print("== diskless merge throughput ==")
    print(
        f"data             {size / MIB:.0f} MiB of WAL batches in {objects} WAL objects, "
        f"{args.partitions} partitions, {segments} segments of <= {args.segment_mib} MiB"
    )
    report({label: seconds for label, (seconds, _) in timed.items()}, size)
    print(
        f"airflow's part   prepare {prepare_s:.2f} s (STARTED rows), finalize {finalize_s:.2f} s "
        f"(verify, FINISHED, drop); WAL start now {left}"
    )
    print(f"stored           {stored / MIB:.0f} MiB chunked (compression {size / stored:.2f}x)")
    print(f"spark local[{args.cores}]   load avg before {load_before:.2f}")


def report(seconds: dict[str, float], size: int) -> None:
    """Each ceiling, then each merge against its own layout's ceiling, beside the goal."""
    for layout, what in (("plain", "no change"), ("zstd+AES", "4 MiB chunks transformed")):
        rate = size / MIB / seconds[f"ceiling, {layout}"]
        print(f"ceiling, {layout:8s} {rate:6.1f} MiB/s (ranged GETs, write, fsync; {what})")
    for layout in ("plain", "zstd+AES"):
        merge, ceiling = seconds[f"merge, {layout}"], seconds[f"ceiling, {layout}"]
        ratio = ceiling / merge
        verdict = "meets" if ratio >= GOAL else "misses"
        print(
            f"merge, {layout:10s} {size / MIB / merge:6.1f} MiB/s, {ratio:.0%} of its ceiling "
            f"(job {merge:.2f} s; {verdict} the goal of {GOAL:.0%})"
        )


def finalize(
    plans: list[MergePlan],
    results: list[dict],
    coordinator: DisklessCoordinator,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    options: MergeOptions,
) -> None:
    by_id = {r["segment_id"]: RewriteResult.from_dict(r) for r in results}
    for plan in plans:
        finalize_merge(
            plan,
            by_id,
            coordinator,
            store,
            rsm,
            owner=OWNER,
            delete_grace_ms=options.delete_grace_ms,
        )


if __name__ == "__main__":
    main()
