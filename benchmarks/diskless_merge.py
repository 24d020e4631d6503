"""How fast Spark merges diskless WAL batches into tiered segments, against a copy ceiling.

Data: ``--mib`` MiB of producer batches (uncompressed JSON, about 16 KiB each: big_segments'
templates) produced through the WAL writer into 8 MiB WAL objects, round-robin over
``--partitions`` partitions, then planned by ``prepare_merge`` (COPY_SEGMENT_STARTED, segments
rolled at ``--segment-mib``) exactly as the diskless_merge DAG does.

Three Spark ``local[2]`` jobs then run over the same plan, one Spark task per partition, as
``spark_apps/merge_wal_segments.py`` submits them:

1. the ceiling: the same ranged GETs of the same WAL objects, the bytes written unchanged to
   one file per segment (write + fsync): reading and writing the same bytes, no transformation;
2. the merge into the plain layout: CRC check, offset injection, .index/.timeindex/snapshot in
   a staging directory, upload with sha256 and fsync; no compression or encryption;
3. the merge into the chunked layout (4 MiB chunks, zstd + AES-256-GCM), the default.

MiB/s = WAL batch bytes merged / seconds of the timed collect() (Spark's start-up and a
warm-up job excluded). Prepare and finalize (verify every object, FINISHED, drop the batches
from the WAL) are timed too: they are Airflow's part.

Run: .venv/bin/python benchmarks/diskless_merge.py [--mib 512] [--partitions 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from big_segments import build_templates

from tierflow.config import Settings
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.merge import MergeOptions, MergePlan, finalize_merge, prepare_merge
from tierflow.diskless.merge_executor import merge_partitions
from tierflow.diskless.merge_job import MergeJob
from tierflow.diskless.wal_reads import runs
from tierflow.diskless.writer import WalWriter
from tierflow.lifecycle.copy.rewrite import RewriteResult
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.storage.factory import settings_object_store
from tierflow.transform.keyring import KeyRing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIB = 1 << 20
TOPIC, TOPIC_ID = "bench", "b2Dq7iPXQfSdD0wL4RZ0NA"
OWNER = "bench:diskless_merge"


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


def plain_copy(settings: Settings, rows: Iterable[dict]) -> Iterator[int]:
    """The ceiling: each segment's ranged GETs written unchanged to a file, fsynced."""
    objects = settings_object_store(settings)
    target = settings.data_dir / "ceiling"
    target.mkdir(exist_ok=True)
    for row in rows:
        for segment in MergeJob.from_dict(row).segments:
            path = target / f"{segment.rewrite.segment_id}.log"
            with open(path, "wb") as out:
                for run in runs(list(segment.batches)):
                    first, last = run[0], run[-1]
                    out.write(
                        objects.read_range(first.object_key, first.byte_offset, last.byte_end)
                    )
                out.flush()
                os.fsync(out.fileno())
            yield path.stat().st_size


def timed_spark(spark: SparkSession, rows: list[dict], work: Callable) -> tuple[float, list]:
    sc = spark.sparkContext
    sc.parallelize([], 2).mapPartitions(lambda part: work(part)).collect()  # warm the workers
    os.sync()
    started = time.perf_counter()
    results = sc.parallelize(rows, len(rows)).mapPartitions(lambda part: work(part)).collect()
    return time.perf_counter() - started, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512, help="WAL data to merge, in MiB")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--segment-mib", type=int, default=64, help="segment.bytes in MiB")
    parser.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        base = Path(tmp)
        ring = KeyRing.generate(base / "keys", "bench")
        plain = Settings.embedded(base, storage_layout="plain", storage_prefix="plain/")
        chunked = replace(plain, storage_layout="chunked", storage_prefix="chunked/")
        chunked = replace(chunked, keyring=ring.path, chunk_size=4 * MIB, compression=True)
        store = open_store(plain)
        store.register_topic(TOPIC, TOPIC_ID, actor="bench", now_ms=0, remote_storage_enable=True)
        coordinator = DisklessCoordinator.for_store(store)
        coordinator.register_topic(TOPIC_ID, args.partitions, now_ms=0)
        print(f"producing {args.mib} MiB into WAL objects ...", flush=True)
        started = time.perf_counter()
        size = produce(plain, coordinator, args.mib, args.partitions)
        produced_s = time.perf_counter() - started
        objects = len(coordinator.wal_objects())
        print(f"  {objects} WAL objects in {produced_s:.1f} s", flush=True)

        options = MergeOptions(
            cutoff_ms=int(time.time() * 1000),
            staging_root=base / "staging",
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
        segments = sum(len(plan.copy.jobs) for plan in plans)

        os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master(f"local[{args.cores}]")
            .appName("tierflow-diskless-merge-benchmark")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        try:
            print("ceiling: ranged GETs written unchanged ...", flush=True)
            ceiling_s, copied = timed_spark(spark, rows, lambda part: plain_copy(plain, part))
            print("merge into the plain layout ...", flush=True)
            plain_s, plain_results = timed_spark(
                spark, rows, lambda part: merge_partitions(plain, part)
            )
            print("merge into the chunked layout (zstd + AES-256-GCM) ...", flush=True)
            chunked_s, results = timed_spark(
                spark, rows, lambda part: merge_partitions(chunked, part)
            )
        finally:
            spark.stop()
        failed = [r["error"] for r in (*plain_results, *results) if r["error"]]
        if failed or sum(copied) != size:
            raise RuntimeError(f"{len(failed)} failed: {failed[:2]}; ceiling copied {sum(copied)}")

        started = time.perf_counter()
        finalize(plans, results, coordinator, store, rsm, options)
        finalize_s = time.perf_counter() - started
        stored = sum(o["size"] for r in results for o in r["objects"])
        left = coordinator.log(TOPIC_ID, 0)

    rate = size / MIB
    print()
    print("== diskless merge throughput ==")
    print(
        f"data             {rate:.0f} MiB of WAL batches in {objects} WAL objects, "
        f"{args.partitions} partitions, {segments} segments of <= {args.segment_mib} MiB"
    )
    print(f"ceiling          {rate / ceiling_s:.1f} MiB/s (ranged GETs, write, fsync; no change)")
    for label, seconds in (("merge, plain", plain_s), ("merge, zstd+AES", chunked_s)):
        print(
            f"{label:16s} {rate / seconds:.1f} MiB/s, {ceiling_s / seconds:.0%} of the ceiling "
            f"(job {seconds:.2f} s)"
        )
    print(
        f"airflow's part   prepare {prepare_s:.2f} s (STARTED rows), finalize {finalize_s:.2f} s "
        f"(verify, FINISHED, drop); WAL start now {left.diskless_start_offset}"
    )
    print(f"stored           {stored / MIB:.0f} MiB chunked (compression {size / stored:.2f}x)")
    print(f"spark local[{args.cores}]   load avg before {load_before:.2f}")


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
